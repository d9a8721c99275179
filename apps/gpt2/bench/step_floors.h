#pragma once
// Where a GPU training step's device time goes, by kind of kernel, beside
// the least time each kind could take: `gpt2 bench train --profile-steps`'s
// second table (docs/gpu.md).

#include <cstdint>
#include <map>
#include <string>

#include "apps/gpt2/bench/kernel_profile.h"
#include "gpt2/model/gpt.h"

namespace gpt2::app {

/// What a kernel does, from its name: "copy" (memcpy, memset), "attention"
/// (flash, cuDNN, memory-efficient), "product" (cuBLAS and CUTLASS
/// products), "optimizer" (AdamW and the clip's norms: multi-tensor
/// kernels), "norm" (LayerNorm, torch's or the library's), "loss" (the
/// head's softmax and cross-entropy), "embedding" (lookups and their
/// gradients), "reduce" (sums: the biases' gradients), else "pointwise".
std::string kernel_kind(const std::string& name);

/// The shape of one training step: GPT-2's layout, `params` the unique
/// parameters, `act_bytes` the bytes of an activation (2 under bf16
/// autocast, 4 in float32).
struct StepShape {
  int64_t n_layer = 0, n_embd = 0, vocab = 0, batch = 0, seq = 0, params = 0;
  int64_t act_bytes = 2;

  /// `model`'s step on (batch, seq) tokens with activations of `act_bytes`.
  static StepShape of(const GPTImpl& model, int64_t batch, int64_t seq, int64_t act_bytes);
};

/// The least device time, in microseconds a step, of each kind that has a
/// floor: "product" and "attention" at `flops_per_s` (the model's FLOPs:
/// 6 per weight and token, the head's weight padded to a multiple of 64
/// rows as the fused head runs it; causal attention's 6 L T C per token),
/// "norm", "loss" and "optimizer" at `bytes_per_s` (the bytes each must
/// read and write once: every norm's float32 input and half output and
/// back, the head's half logits read and their gradient written, AdamW's
/// four float32 tensors read and three written plus the clip's read).
std::map<std::string, double> step_floors_us(const StepShape& shape, double flops_per_s,
                                             double bytes_per_s);

/// One row per kind, largest first: microseconds a step, share of the
/// device time, launches a step, and where it has one its floor and how
/// many times the floor it took.
std::string kind_table(const KernelProfile& profile, const std::map<std::string, double>& floors);

}  // namespace gpt2::app
