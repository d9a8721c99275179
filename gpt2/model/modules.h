#pragma once
/// The modules of a GPT-2 block, as the classes of nanoGPT's model.py above
/// GPT: Linear (with GPT-2's residual-scale flag), LayerNorm,
/// CausalSelfAttention, MLP and Block. Each forward is the line nanoGPT
/// has; products, norms, GELU and attention go through gpt2/ops/ops.h.

#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "gpt2/model/config.h"
#include "gpt2/model/kv_store.h"
#include "gpt2/ops/ops.h"

namespace gpt2 {

/// While alive, gpt2::Linear, gpt2::LayerNorm and gpt2::GPT built on this
/// thread allocate their tensors and leave them unwritten. GPT uses it while
/// building its children, so that init_weights writes each tensor once and a
/// seeded model leaves torch's default generator untouched; clone and the
/// loaders use it (GPTImpl::uninitialized) before copying tensors in.
/// Scopes nest.
class DeferInit {
 public:
  DeferInit();
  ~DeferInit();
  DeferInit(const DeferInit&) = delete;
  DeferInit& operator=(const DeferInit&) = delete;

  /// Whether a DeferInit is alive on this thread.
  static bool active();

 private:
  bool previous_;
};

/// Options for gpt2::Linear.
struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  /// Width of the input.
  TORCH_ARG(int64_t, in_features);
  /// Width of the output.
  TORCH_ARG(int64_t, out_features);
  /// Whether to add a learned bias.
  TORCH_ARG(bool, bias) = true;
  /// True for projections that add into the residual stream (attn.c_proj,
  /// mlp.c_proj): init draws their weight with the scaled std.
  TORCH_ARG(bool, residual_scale) = false;
};

/// y = x W^T + b, as torch::nn::Linear, plus the residual-scale flag.
/// x (*, in) -> y (*, out).
class LinearImpl : public torch::nn::Cloneable<LinearImpl> {
 public:
  LinearImpl(int64_t in_features, int64_t out_features)
      : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);

  /// Registers weight (out, in) and, if enabled, bias (out), and fills
  /// them with reset_parameters() unless a DeferInit is active.
  void reset() override;
  /// GPT-2's base init: weight ~ N(0, InitOptions().std()^2), bias 0, so a
  /// Linear built alone is usable. The residual scale needs the model's
  /// depth: init_weights() applies it, reading the flag.
  void reset_parameters();

  /// x W^T + b: ops::linear, through the packed copy where one is set.
  torch::Tensor forward(const torch::Tensor& input);

  /// Also keeps the weight as `format` (bf16 or int8) for products run
  /// without autograd (decoding, evaluation); kFloat32 drops the copy. The
  /// float32 weight stays: training, saving and export use it, and the copy
  /// is made again at the next product after it changes.
  void set_weight_format(WeightFormat format) { packed_.set_format(format, weight); }
  WeightFormat weight_format() const { return packed_.format(); }
  /// Bytes a product without autograd reads for the weight.
  int64_t weight_bytes() const { return packed_.bytes(weight); }

  /// Prints `gpt2::Linear(in_features=.., out_features=.., bias=.., residual_scale=..)`.
  void pretty_print(std::ostream& stream) const override;

  /// The options this module was built with, the flag included.
  LinearOptions options;
  /// (out_features, in_features), as torch.nn.Linear.
  torch::Tensor weight;
  /// (out_features); undefined when options.bias() is false.
  torch::Tensor bias;

 private:
  ops::PackedWeight packed_;
};
TORCH_MODULE(Linear);

/// Options for gpt2::LayerNorm.
struct LayerNormOptions {
  /* implicit */ LayerNormOptions(int64_t ndim) : ndim_(ndim) {}
  /// Size of the normalized (last) dimension.
  TORCH_ARG(int64_t, ndim);
  /// Whether to add a learned bias.
  TORCH_ARG(bool, bias) = true;
  /// Added to the variance for stability; 1e-5 as GPT-2.
  TORCH_ARG(double, eps) = 1e-5;
};

/// y = (x - mean) / sqrt(var + eps) * weight + bias over the last dimension.
/// x (*, ndim) -> y (*, ndim).
class LayerNormImpl : public torch::nn::Cloneable<LayerNormImpl> {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);

  /// Registers weight (ndim) and, if enabled, bias (ndim), and fills them
  /// with reset_parameters() unless a DeferInit is active.
  void reset() override;
  /// weight 1, bias 0.
  void reset_parameters();

  torch::Tensor forward(const torch::Tensor& input);

  /// Prints `gpt2::LayerNorm(ndim, eps=.., bias=..)`.
  void pretty_print(std::ostream& stream) const override;

  /// The options this module was built with.
  LayerNormOptions options;
  /// (ndim), the gain.
  torch::Tensor weight;
  /// (ndim); undefined when options.bias() is false.
  torch::Tensor bias;
};
TORCH_MODULE(LayerNorm);

/// The causal mask of T queries at positions past .. past + T - 1 over the
/// past + T keys: (T, past + T) bool, true where the key comes after the
/// query. Undefined for T == 1: a single new token sees every key.
using ops::causal_mask;

/// Each position attends to itself and the positions before it. The causal
/// mask is made per model call, not stored, so the state dict holds
/// parameters only.
class CausalSelfAttentionImpl : public torch::nn::Cloneable<CausalSelfAttentionImpl> {
 public:
  explicit CausalSelfAttentionImpl(const GPTConfig& config);

  /// Registers c_attn, c_proj (flagged residual) and the dropouts.
  void reset() override;

  /// x (B, T, C) -> y (B, T, C). With a cache, x's keys and values go into
  /// layer `layer` of it and the queries attend over the S keys it hands
  /// back. Without one, x starts at position 0. `mask` (true: may not
  /// look), broadcast to (B, nh, T, S), is made once for all blocks by the
  /// caller; undefined means causal over the S keys, the new positions
  /// being the last T (as nanoGPT's is_causal=True when S == T, which lets
  /// a GPU use its flash kernel).
  torch::Tensor forward(const torch::Tensor& x, KVStore* cache = nullptr, size_t layer = 0,
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

/// x + attn(ln_1(x)), then + mlp(ln_2(x)): two residual additions per block.
class BlockImpl : public torch::nn::Cloneable<BlockImpl> {
 public:
  explicit BlockImpl(const GPTConfig& config);

  /// Registers ln_1, attn, ln_2, mlp.
  void reset() override;

  /// x (B, T, C) -> x (B, T, C); `cache`, `layer` and `mask` go to the attention.
  torch::Tensor forward(torch::Tensor x, KVStore* cache = nullptr, size_t layer = 0,
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
