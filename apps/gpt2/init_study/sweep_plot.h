#pragma once
// Pictures of the init sweep, drawn with PLplot's SVG device: one line per
// scheme and depth against block index, colour by scheme, dash by depth.

#include <string>
#include <vector>

#include "apps/gpt2/init_study/study_types.h"

namespace gpt2::app {

/// What to draw of each profile.
enum class InitQuantity { kResidualStd, kGradNorm };

/// Draws `profiles` to the SVG file `path` (replaced atomically), y on a
/// log scale. Throws FileError when `path` cannot be written.
void plot_init_profiles(const std::vector<InitProfile>& profiles, InitQuantity what,
                        const std::string& path, const std::string& title);

}  // namespace gpt2::app
