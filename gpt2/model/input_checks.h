#pragma once
// The checks GPT's entry points run on their inputs before any op: each
// failure an InputError naming the value (check_token_ids is public, in
// gpt.h).

#include <torch/types.h>

#include "gpt2/model/gpt.h"

namespace gpt2::detail {

/// idx on the model's device and of a dtype it runs, then check_token_ids.
void check_idx(const GPTImpl& model, const torch::Tensor& idx);
/// targets shaped like idx, on its device, in [0, vocab_size) or -1.
void check_targets(const torch::Tensor& targets, const torch::Tensor& idx,
                   const GPTConfig& config);

}  // namespace gpt2::detail
