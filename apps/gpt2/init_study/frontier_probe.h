#pragma once
// What `init-study frontier` measures on its val batches besides the loss:
// the residual stream's RMS after the last block and the largest attention
// logit. The logits come from a separate, unfused computation from each
// block's own weights, so training keeps its fused attention and pays
// nothing; only the evaluations do.

#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gpt2/model/modules.h"
#include "gpt2/model/gpt.h"
#include "gpt2/train/token_loader.h"

namespace gpt2::app {

/// One evaluation of a model on fixed batches.
struct Probe {
  /// Mean cross entropy over the batches.
  double loss = 0;
  /// RMS of the residual stream after the last block (before ln_f), over
  /// every element of every batch.
  double rms = 0;
  /// Largest pre-softmax attention logit over every block, head, batch and
  /// causal (query, key) pair.
  double max_attn_logit = 0;
};

/// x (B, T, C), the stream entering `block` -> its attention's logits
/// q.k / sqrt(head size) (B, nh, T, T), -inf where the key comes after the
/// query: what the block's softmax sees, from its ln_1 and c_attn.
torch::Tensor attention_logits(BlockImpl& block, const torch::Tensor& x);

/// Runs `batches` through `model` block by block in eval mode without grad
/// (its mode restored after) and measures them.
Probe probe(GPTImpl& model, const std::vector<Batch>& batches);

/// The larger of two attention logits, NaN where either is: a model whose
/// logits went NaN says so (std::max keeps its first argument against a NaN).
inline double larger_logit(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN()
                                        : std::max(a, b);
}

}  // namespace gpt2::app
