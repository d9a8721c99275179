#pragma once
/// The ops the model calls, in the spirit of torch::nn::functional: the one
/// seam between GPT-2's modules and how a machine computes them.
///
/// Each op decides by the tensors it is given (device, dtype, grad mode,
/// shape): the library's CPU kernels where they apply and are faster
/// (float32 CPU tensors, the oneDNN product path chosen), torch's own ops
/// otherwise (any other device, float64, a KV cache). Both paths give the
/// same values to float rounding; tests/ops holds each op to torch's and to
/// float64. docs/cpu-kernels.md says why each kernel exists.

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "gpt2/ops/settings.h"

namespace gpt2::ops {

/// Storage for a parameter, uninitialized: (sizes) of torch's default
/// dtype, from the ops layer's large-tensor memory when it is large.
torch::Tensor empty(at::IntArrayRef sizes);

/// y = x W^T + b, as torch::linear: x (*, in), W (out, in), b (out) or
/// undefined -> y (*, out).
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias);

/// A Linear's weight kept also in a smaller format (WeightFormat) for the
/// products run without autograd on float32 CPU input; packed again at the
/// first product after the weight changes (an optimizer step, a load). A
/// copy of a PackedWeight keeps the format and packs its own weight.
class PackedWeight {
 public:
  PackedWeight() = default;
  PackedWeight(const PackedWeight& other) : format_(other.format_) {}
  PackedWeight& operator=(const PackedWeight& other);
  PackedWeight(PackedWeight&&) = default;
  PackedWeight& operator=(PackedWeight&&) = default;

  /// Packs `weight` (out, in) as `format` now; kFloat32 (the default)
  /// drops the copy.
  void set_format(WeightFormat format, const torch::Tensor& weight);
  WeightFormat format() const { return format_; }
  /// Bytes a product without autograd reads for `weight`: the packed
  /// copy's when one is made, else the weight's.
  int64_t bytes(const torch::Tensor& weight) const;

  /// The packed copy and the weight version it was made from.
  struct Copy;

 private:
  friend torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& bias, PackedWeight& packed);
  // The copy of `weight`, packed again if it changed since.
  const Copy& of(const torch::Tensor& weight);

  WeightFormat format_ = WeightFormat::kFloat32;
  std::shared_ptr<Copy> copy_;
};

/// linear(x, weight, bias), through `packed`'s copy of the weight where its
/// format is not kFloat32, autograd is off and x is a float32 CPU tensor.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias, PackedWeight& packed);

/// torch::layer_norm over the last dimension, x (*, C), weight (C), bias
/// (C) or undefined. On a CUDA device under autocast, where the library's
/// kernel applies (float32 x and parameters), the output is in the
/// autocast dtype (what the next product reads, rounded once from the same
/// float32 values) rather than torch's float32: gpt2/ops/cuda/layernorm.cu.
torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& weight,
                         const torch::Tensor& bias, double eps);

/// torch::gelu(x, approximate), approximate "none" or "tanh".
torch::Tensor gelu(const torch::Tensor& x, const std::string& approximate);

/// softmax(q k^T / sqrt(hs), -inf where mask is true) v, dropout `dropout_p`
/// on the weights, as torch's scaled_dot_product_attention: q (B, nh, T,
/// hs), k and v (B, nh, S, hs) -> (B, nh, T, hs). mask (T, S) or (B, 1, T,
/// S) bool, true where a query may not see a key (nanoGPT's masked_fill),
/// or undefined for none; `is_causal` (no mask, S == T) masks as
/// causal_mask(T, 0) does, and lets other devices use their flash kernels.
/// Where q, k and v are the heads of one (B, T, 3C) c_attn output, the CPU
/// kernel reads them there in place.
torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& mask, double dropout_p, bool is_causal = false);

/// The mask of T queries at positions past..past+T-1 over past + T keys:
/// (T, past + T) bool, true where the key comes after the query; undefined
/// for T <= 1 (nothing to mask).
torch::Tensor causal_mask(int64_t T, int64_t past, const torch::Device& device);

/// nanoGPT's F.cross_entropy(logits, targets, ignore_index=-1): logits (N,
/// V), targets (N) in [0, V) or -1 -> the mean loss, a scalar, float32
/// for bfloat16 or float16 logits (scored in float32, as autocast does).
/// Throws gpt2::InputError naming a target outside [0, V) other than -1.
torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets);

/// cross_entropy(linear(x, weight, {}), targets), lm_head's product and the
/// loss together: x (N, C), weight (V, C), targets (N) in [0, V) or -1 (not
/// checked here: reading them would wait for the device, and
/// GPTImpl::loss checks them first) -> the mean loss, a float32 scalar.
/// head_loss_path() (settings.h) chooses: by default the two ops on the CPU, and
/// elsewhere fused_head_loss (gpt2/ops/fused/head_loss.h), which makes no
/// float32 logits of the whole batch, pads the vocabulary of its products
/// to an aligned size, and runs the backward's products in the forward.
/// Equal to the two ops to float rounding.
torch::Tensor head_loss(const torch::Tensor& x, const torch::Tensor& weight,
                        const torch::Tensor& targets);

/// weight[idx], idx (*) int64 -> (*, C), for a token embedding whose weight
/// is also the output head's and whose head product runs later in the same
/// forward (so the head's dense gradient reaches autograd first). The CPU
/// kernel gives the embedding's gradient as sparse rows that autograd adds
/// into the head's in place; the sum equals torch's to the bit.
torch::Tensor tied_embedding(const torch::Tensor& idx, const torch::Tensor& weight);

/// While alive, torch's ops on this thread run on the kernels' threads
/// (KernelTeam): a model's forward opens one.
using ThreadScope = KernelTeam;

/// While alive, as Python's `with torch.autocast(device.type, dtype)`:
/// the products of ops on `device`'s type run in `dtype` (torch::kBFloat16;
/// torch::kHalf on CUDA), parameters and gradients stay float32, and the
/// ops seam leaves that device's work to torch. torch::kFloat changes
/// nothing (nanoGPT's dtype='float32'). Scopes nest; each restores the state
/// it found. Throws gpt2::Error for another device type or dtype.
class Autocast {
 public:
  Autocast(const torch::Device& device, torch::ScalarType dtype);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool active_ = false;
  torch::DeviceType type_ = torch::kCPU;
  bool was_enabled_ = false;
  torch::ScalarType was_dtype_ = torch::kBFloat16;
};

/// Whether an Autocast scope (or torch's own autocast) is on for `type`
/// on this thread.
bool autocast_enabled(torch::DeviceType type);

}  // namespace gpt2::ops
