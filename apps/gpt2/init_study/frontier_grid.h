#pragma once
// The grids of `gpt2 init-study frontier`: its named profiles, the checks
// a grid passes before anything is written, and the order of its cells.

#include <string>
#include <vector>

#include "apps/gpt2/init_study/study_types.h"

namespace gpt2::app {

/// The names frontier_profile() knows: "full" (the default CPU grid),
/// "smoke" (seconds, for tests) and "gpt2-gpu" (GPT-2's width and depths
/// on a GPU in bfloat16, no clipping; docs/init-gpu.md sizes it).
std::vector<std::string> frontier_profile_names();
/// The grid called `name`; ConfigError naming the known profiles otherwise.
FrontierGrid frontier_profile(const std::string& name);

/// The value of `--clip TEXT`: a gradient norm, or 0 for `off` (no
/// clipping). ConfigError naming the text otherwise.
double clip_from_flag(const std::string& text);

/// Throws ConfigError naming the first setting out of range and its value.
/// The device's name is checked (and the GPU looked for) when runs start:
/// a grid's report needs none.
void validate(const FrontierGrid& grid);

/// Every cell of `grid`, seed-major, then depth, lr and scheme: a piece cut
/// anywhere holds whole seeds first and compares schemes pairwise.
std::vector<FrontierCell> frontier_cells(const FrontierGrid& grid);

}  // namespace gpt2::app
