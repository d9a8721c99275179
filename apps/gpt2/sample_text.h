#pragma once
// A short sample after training. Stopgap until gpt2/generate lands: a
// temperature + top-k multinomial loop over GPTImpl::forward_last, without
// a KV cache.

#include <cstdint>
#include <vector>

#include "gpt2/model/gpt.h"

namespace gpt2::app {

/// `prompt` followed by `n` sampled ids: logits of the last position (the
/// context cropped to block_size) divided by `temperature`, cut to the
/// `top_k` largest, sampled from a generator seeded with `seed`. Runs in
/// eval mode without grad and leaves the model in the mode it found.
std::vector<int64_t> sample_tokens(GPTImpl& model, std::vector<int64_t> prompt, int64_t n,
                                   double temperature, int64_t top_k, uint64_t seed);

}  // namespace gpt2::app
