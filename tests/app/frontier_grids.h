#pragma once
// Grids of `init-study frontier` small enough for the tests: a few seconds
// on the CPU.

#include <string>

#include "apps/gpt2/init_study/frontier_grid.h"

namespace gpt2::testing {

/// The smoke profile's model with `profile`'s clip, device and dtype, cut
/// to one cell: scheme zero, depth 2, lr 1e-2, seed 1; 4 steps, evaluated
/// every 2; into `out`.
inline app::FrontierGrid one_cell(const std::string& out, const std::string& profile = "smoke") {
  app::FrontierGrid g = app::frontier_profile("smoke");
  const app::FrontierGrid p = app::frontier_profile(profile);
  g.clip = p.clip;
  g.device = p.device;
  g.dtype = p.dtype;
  g.schemes = {ResidualScale::kZero};
  g.depths = {2};
  g.lrs = {1e-2};
  g.steps = 4;
  g.eval_interval = 2;
  g.out = out;
  return g;
}

}  // namespace gpt2::testing
