#pragma once
/// nanoGPT's loss, F.cross_entropy(logits, targets, ignore_index=-1), as one
/// autograd function whose large buffers come from the kernels' pool
/// (buffer_pool.h).
///
/// torch's cross_entropy allocates three tensors the size of the logits per
/// step (log_softmax's output, nll_loss's gradient, log_softmax's gradient);
/// this one allocates two, both pooled: the forward keeps exp(x - max) per
/// row for the backward, and the backward writes (softmax - onehot) / count
/// into the gradient directly. The loss and gradient equal torch's to float
/// rounding.

#include <torch/types.h>

namespace gpt2::cpu {

/// Whether cross_entropy() takes these: gpt2's kernels chosen
/// (matmul_backend() onednn), float32 CPU logits (N, V) and int64 targets
/// (N).
bool cross_entropy_applies(const torch::Tensor& logits, const torch::Tensor& targets);

/// The mean over the targets that are not -1 of -log softmax(logits)[target],
/// with autograd: logits (N, V), targets (N) in [0, V) or -1. NaN when every
/// target is -1, as torch's. A target outside [0, V) other than -1 throws
/// gpt2::InputError naming it and its row. Where cross_entropy_applies() is
/// false it is torch's own cross_entropy.
torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets);

}  // namespace gpt2::cpu
