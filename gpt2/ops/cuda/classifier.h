#pragma once
// The ATen side of classifier.cu: the fused head's scoring of its logits
// (ops::head_loss on a CUDA device hands it to fused_head_loss). Internal
// to gpt2/ops; built where LibTorch has CUDA and CMake finds nvcc
// (GPT2_CUDA_KERNELS).

#include <torch/types.h>

#include <cstdint>

namespace gpt2::ops::cuda {

/// Whether classify_in_place() takes these: logits (N, ld) float32,
/// bfloat16 or float16, contiguous, on a CUDA device, with 1 <= V <= ld;
/// targets (N) int64 on it, contiguous.
bool classifier_applies(const torch::Tensor& logits, const torch::Tensor& targets, int64_t V);

/// Each row's loss, (N) float32: logsumexp(logits[r, :V]) -
/// logits[r, targets[r]], 0 where the target is -1 (targets must lie in
/// [0, V) or be -1). With `factor` (N) float32 defined, also writes the
/// loss's gradient over the logits: (softmax - onehot) * factor[r] in
/// [0, V) and 0 in [V, ld). Not differentiable: fused_head_loss's forward
/// calls it.
torch::Tensor classify_in_place(torch::Tensor& logits, const torch::Tensor& targets,
                                const torch::Tensor& factor, int64_t V);

}  // namespace gpt2::ops::cuda
