#pragma once
// The loss curve of a run: train loss per step (raw and smoothed) and val
// loss against step, drawn with PLplot's SVG device.

#include <cstddef>
#include <string>
#include <vector>

#include "gpt2/train/train_log.h"

namespace gpt2::app {

/// A centred moving average of `y` over `window` points (fewer at the ends):
/// it follows a noisy loss curve without the lag of an exponential average.
std::vector<double> moving_average(const std::vector<double>& y, size_t window);

/// The largest loss or step magnitude the plot draws (PLplot's axes fail
/// on values near double's range).
inline constexpr double kMaxDrawable = 1e15;

/// Draws `rows` (from read_log) to the SVG file `path`, titled `title`; a
/// series of more than about 4,000 points is drawn every k-th point.
/// Throws InputError when there is no finite train or val loss to draw or a
/// finite loss or step is past kMaxDrawable (naming its row), FileError when
/// `path` cannot be written.
void plot_losses(const std::vector<LogRow>& rows, const std::string& path,
                 const std::string& title);

}  // namespace gpt2::app
