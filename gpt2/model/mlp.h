#pragma once
/// The position-wise feed-forward network of a block, as nanoGPT's MLP.

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/pimpl.h>

#include "gpt2/model/config.h"
#include "gpt2/model/linear.h"

namespace gpt2 {

/// x -> c_proj(gelu(c_fc(x))), widening C to 4C and back.
class MLPImpl : public torch::nn::Cloneable<MLPImpl> {
 public:
  explicit MLPImpl(const GPTConfig& config);

  /// Registers c_fc, c_proj (flagged residual) and the dropout.
  void reset() override;

  /// x (B, T, C) -> y (B, T, C).
  torch::Tensor forward(const torch::Tensor& x);

  /// The model's config (n_embd, bias, dropout, gelu are read).
  GPTConfig config;
  /// C -> 4C.
  Linear c_fc{nullptr};
  /// 4C -> C into the residual stream, residual-scaled.
  Linear c_proj{nullptr};
  /// Dropout on the output.
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(MLP);

}  // namespace gpt2
