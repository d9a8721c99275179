#pragma once
/// Optimizer set-up as nanoGPT's configure_optimizers: AdamW with weight
/// decay on matrices only, each tensor (the tied one included) exactly once.

#include <torch/optim/adamw.h>

#include <memory>
#include <vector>

#include "gpt2/model/gpt.h"

namespace gpt2 {

/// The model's unique parameters split by whether weight decay applies.
struct ParamGroups {
  /// dim >= 2: Linear weights, wte (= lm_head), wpe.
  std::vector<torch::Tensor> decay;
  /// dim < 2: biases and LayerNorm gains.
  std::vector<torch::Tensor> no_decay;
};

/// Splits model.unique_parameters() into decay / no_decay.
ParamGroups param_groups(const GPTImpl& model);

/// AdamW over param_groups(model): the decay group uses
/// options.weight_decay(), the other 0. nanoGPT uses lr 6e-4,
/// betas (0.9, 0.95), weight_decay 0.1.
std::unique_ptr<torch::optim::AdamW> configure_optimizers(
    const GPTImpl& model, const torch::optim::AdamWOptions& options);

}  // namespace gpt2
