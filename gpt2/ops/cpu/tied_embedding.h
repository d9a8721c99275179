#pragma once
/// The token embedding of a tied model, whose gradient adds into the
/// head's in place.
///
/// With the weight tied, autograd sums two gradients for wte.weight: the
/// head's (V, C) product and the embedding's. torch's embedding backward
/// makes its gradient dense: a (V, C) tensor of zeros with the B x T rows
/// added in, which autograd then adds to the head's into a third (V, C)
/// tensor (two dense gradients are never summed in place). This one
/// returns its gradient as a sparse tensor of the rows the batch used, which
/// autograd adds into the head's gradient where it lies. The sum is the
/// same to the bit: each row's gradients are summed in token order from
/// zero, as torch's index_add does, and then added to the head's.
///
/// Use it only where the head's dense gradient of the same weight reaches
/// autograd first, as in GPT::forward (the head's backward runs before the
/// embedding's, which depends on it): arriving alone, a sparse gradient
/// would become the weight's .grad.

#include <torch/types.h>

namespace gpt2::cpu {

/// weight[idx] (idx (*), int64) -> (*, C), with autograd, its weight
/// gradient sparse. torch::embedding where gpt2's kernels are not chosen
/// (matmul_backend() torch) or the weight is not a float32 CPU tensor.
torch::Tensor tied_embedding(const torch::Tensor& idx, const torch::Tensor& weight);

}  // namespace gpt2::cpu
