#pragma once
/// The output head and nanoGPT's loss in one autograd function, for any
/// device: cross_entropy(x W^T, targets, ignore_index=-1) without float32
/// logits of the whole batch, in the manner of llm.c's fused classifier.
///
/// The logits are made once, in the products' dtype. A chunk of rows at a
/// time is scored in float32 and, where a gradient is wanted, its logits
/// are overwritten in place by their gradient, (softmax - onehot) / count.
/// Two products then turn that into dx and dW, in the forward, each one
/// call; the backward only scales them by the incoming gradient. Under
/// bfloat16 autocast at B 32, T 1024 this holds the 3.3 GB of bf16 logits
/// and one chunk, where the unfused path makes the bf16 logits, their
/// float32 copy and log_softmax's float32 output in the forward (16 GB at
/// once), keeps the last for the backward, and makes three more tensors
/// that size there.
///
/// Inside, the vocabulary is padded to a multiple of `pad_to` with zero
/// rows of W (nanoGPT's 50304 for GPT-2's 50257) so that every product's
/// leading dimension is aligned; the pad logits are set to -inf before the
/// softmax, so their probability and gradient are zero and the loss and
/// gradients are those of the V real rows. The weight itself keeps V rows.

#include <torch/types.h>

#include <cstdint>
#include <functional>

namespace gpt2::ops {

/// How fused_head_loss cuts its scoring.
struct HeadLossChunks {
  HeadLossChunks(int64_t rows_ = 0, int64_t pad_to_ = 64) : rows(rows_), pad_to(pad_to_) {}
  /// Rows scored per chunk; 0: the most whose float32 scores fit in
  /// kHeadLossChunkBytes, rounded down to a multiple of 64.
  int64_t rows = 0;
  /// The vocabulary is padded to a multiple of this in the products.
  int64_t pad_to = 64;
  /// Where set, scores every row at once in place of the chunks: a
  /// device's fused kernel, which the ops seam gives (on a GPU,
  /// gpt2/ops/cuda/classifier.h). Called with the logits (N, padded) in
  /// the products' dtype, the targets (N), `factor` ((N) float32, or
  /// undefined where no gradient is wanted) and V; returns each row's loss
  /// (N) float32 (0 where the target is -1) and, with factor, overwrites
  /// each row's logits by (softmax - onehot) * factor over [0, V) and 0
  /// past V. An undefined result: it does not take these, the chunks run.
  std::function<torch::Tensor(torch::Tensor& logits, const torch::Tensor& targets,
                              const torch::Tensor& factor, int64_t V)>
      score;
};

/// The default chunk's float32 scores: 256 MiB (1,280 rows at GPT-2's
/// vocabulary), enough rows that each chunk's kernels run at full width.
inline constexpr int64_t kHeadLossChunkBytes = int64_t{256} << 20;

/// The mean over the targets that are not -1 of -log softmax(x W^T)[target],
/// a float32 scalar (float64 for float64 products), with autograd to x and
/// W: x (N, C), W (V, C) of one floating dtype (or any, under autocast,
/// whose dtype the products then take), targets (N) int64 in [0, V) or -1, not checked here (reading them
/// would wait for the device; GPTImpl::loss checks them first). NaN when
/// every target is -1, as torch's. The gradients are made in the forward
/// when grad mode is on and x or W requires one.
torch::Tensor fused_head_loss(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& targets, const HeadLossChunks& chunks = {});

}  // namespace gpt2::ops
