#pragma once
/// One pre-norm transformer block, as nanoGPT's Block.

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

#include "gpt2/model/attention.h"
#include "gpt2/model/config.h"
#include "gpt2/model/layer_norm.h"
#include "gpt2/model/mlp.h"

namespace gpt2 {

/// x + attn(ln_1(x)), then + mlp(ln_2(x)): two residual additions per block.
class BlockImpl : public torch::nn::Cloneable<BlockImpl> {
 public:
  explicit BlockImpl(const GPTConfig& config);

  /// Registers ln_1, attn, ln_2, mlp.
  void reset() override;

  /// x (B, T, C) -> x (B, T, C); `cache`, `layer` and `mask` go to the attention.
  torch::Tensor forward(torch::Tensor x, KVCache* cache = nullptr, size_t layer = 0,
                        const torch::Tensor& mask = {});

  /// The model's config.
  GPTConfig config;
  /// Normalizes the attention's input.
  LayerNorm ln_1{nullptr};
  /// Causal self-attention.
  CausalSelfAttention attn{nullptr};
  /// Normalizes the MLP's input.
  LayerNorm ln_2{nullptr};
  /// Feed-forward network.
  MLP mlp{nullptr};
};
TORCH_MODULE(Block);

}  // namespace gpt2
