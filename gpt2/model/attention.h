#pragma once
/// Multi-head causal self-attention, as nanoGPT's CausalSelfAttention.

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/pimpl.h>

#include "gpt2/model/config.h"
#include "gpt2/model/kv_cache.h"
#include "gpt2/model/linear.h"

namespace gpt2 {

/// The causal mask of T queries at positions past .. past + T - 1 over the
/// past + T keys: (T, past + T) bool, true where the key comes after the
/// query. Undefined for T == 1: a single new token sees every key.
torch::Tensor causal_mask(int64_t T, int64_t past, const torch::Device& device);

/// causal_mask for left-padded rows (KVCache::set_padding): (B, 1, T, past
/// + T) bool, true where the key comes after the query or sits in row b's
/// first pads[b] slots, but for a padded slot's own key (so that its query
/// still sees one key and stays finite). `pads` is (B,) int64.
torch::Tensor padded_causal_mask(int64_t T, int64_t past, const torch::Tensor& pads);

/// Each position attends to itself and the positions before it. The causal
/// mask is made per model call, not stored, so the state dict holds
/// parameters only.
class CausalSelfAttentionImpl : public torch::nn::Cloneable<CausalSelfAttentionImpl> {
 public:
  explicit CausalSelfAttentionImpl(const GPTConfig& config);

  /// Registers c_attn, c_proj (flagged residual) and the dropouts.
  void reset() override;

  /// x (B, T, C) -> y (B, T, C). With a cache, x holds the T positions
  /// after the cache's length(): their keys and values are written into
  /// layer `layer` of it and the queries attend to every cached position
  /// too. Without one, x starts at position 0. `mask` is causal_mask(T,
  /// past) (or padded_causal_mask, broadcast over the heads) when the
  /// caller made it once for all blocks; made here if not.
  torch::Tensor forward(const torch::Tensor& x, KVCache* cache = nullptr, size_t layer = 0,
                        const torch::Tensor& mask = {});

  /// The model's config (n_head, n_embd, bias, dropout are read).
  GPTConfig config;
  /// Query, key and value projections for all heads at once: C -> 3C.
  Linear c_attn{nullptr};
  /// Output projection into the residual stream: C -> C, residual-scaled.
  Linear c_proj{nullptr};
  /// Dropout on the attention weights: its p, while training, goes to
  /// ops::attention.
  torch::nn::Dropout attn_dropout{nullptr};
  /// Dropout on the output.
  torch::nn::Dropout resid_dropout{nullptr};
};
TORCH_MODULE(CausalSelfAttention);

}  // namespace gpt2
