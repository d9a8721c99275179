#pragma once
/// GPT-2's initialization (paper, section 2.3) as one function that
/// Module::apply drives over every module. Who gets the residual scale is
/// decided by the flag on gpt2::Linear, never by parameter names.
///
/// | tensor                                 | init                       |
/// | gpt2::Linear weight                    | N(0, std^2)                |
/// | gpt2::Linear weight, residual_scale    | N(0, (std / sqrt(N))^2), or 0 (zero scheme) |
/// | gpt2::Linear bias                      | 0                          |
/// | Embedding weight (wte = lm_head)       | N(0, std^2)                |
/// | the position embedding (wpe)           | N(0, wpe_std^2)            |
/// | gpt2::LayerNorm weight / bias          | 1 / 0                      |

#include <torch/nn/module.h>
#include <torch/types.h>

#include <vector>

#include "gpt2/model/config.h"

namespace gpt2 {

/// One tensor written by init_weights: drawn from N(mean, std^2), or filled
/// with `mean` when std is 0.
struct InitRecord {
  /// The tensor written (shares storage with the parameter).
  torch::Tensor tensor;
  /// Mean of the draw, or the fill value.
  double mean;
  /// Standard deviation of the draw; 0 for a fill.
  double std;
};

/// Initializes every parameter under `root` by config.init(), visiting
/// modules with Module::apply. A tensor registered under several names (the
/// tied wte / lm_head matrix) is written once, by the first module that
/// holds it. `position_embedding` is the module whose weight takes wpe_std.
/// Returns what it wrote, in visiting order.
std::vector<InitRecord> init_weights(torch::nn::Module& root, const GPTConfig& config,
                                     const torch::nn::Module* position_embedding);

}  // namespace gpt2
