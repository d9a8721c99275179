#pragma once
// The pictures of `init-study frontier`, drawn with PLplot's SVG device,
// colour by scheme: final val loss against learning rate (a panel per
// depth, the seeds' spread as a band) and, against depth, the largest
// stable and the best learning rate.

#include <string>
#include <vector>

#include "apps/gpt2/init_study/frontier_report.h"

namespace gpt2::app {

/// Loss (clipped_loss) against peak lr, one panel per depth: per scheme
/// the seeds' mean as a line, their range as a translucent band, a cross
/// where a seed diverged. Writes `path` (replaced atomically); FileError
/// when it cannot be written.
void plot_frontier_loss(const std::vector<FrontierPoint>& points, const std::string& path,
                        const std::string& subtitle);

/// Two panels against depth, one line per scheme: the largest stable lr
/// and the best lr. Writes `path` (replaced atomically).
void plot_frontier_lrs(const std::vector<FrontierSummary>& rows, const std::string& path,
                       const std::string& subtitle);

}  // namespace gpt2::app
