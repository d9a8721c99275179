// GPT's incremental decoding over a KV cache (gpt.h): the positions a cache
// holds are not run again, and a step of fixed shapes serves CUDA graphs.
#include "gpt2/model/gpt.h"

#include <fmt/format.h>

#include <string>

#include "gpt2/error.h"
#include "gpt2/model/input_checks.h"
#include "gpt2/ops/ops.h"

namespace gpt2 {

using detail::check_idx;

torch::Tensor GPTImpl::forward_cached(const torch::Tensor& idx, KVCache& cache) {
  auto x = cached_hidden(idx, cache);                    // (B, T, C)
  return lm_head(x.select(1, x.size(1) - 1));            // (B, V)
}

torch::Tensor GPTImpl::forward_cached_all(const torch::Tensor& idx, KVCache& cache) {
  return lm_head(cached_hidden(idx, cache));             // (B, T, V)
}

torch::Tensor GPTImpl::forward_step(const torch::Tensor& idx, KVCache& cache) {
  KVCache::Step step(cache);  // append() writes at the device's length
  const torch::Device here = lm_head->weight.device();
  if (!idx.defined() || idx.dim() != 2 || idx.size(0) != cache.batch() || idx.size(1) != 1 ||
      idx.scalar_type() != torch::kLong || idx.device() != here) {
    throw InputError(fmt::format(
        "forward_step takes idx ({}, 1) int64 on {}, got {}", cache.batch(), here.str(),
        idx.defined() ? c10::str(c10::toString(idx.scalar_type()), " ", idx.sizes(), " on ",
                                 idx.device())
                      : std::string("an undefined tensor")));
  }
  ops::ThreadScope threads;
  auto x = transformer->drop(transformer->wte(idx) +                   // (B, 1, C)
                             transformer->wpe(cache.step_positions()));  // (B, 1, C)
  const auto mask = cache.step_mask();                                   // (B, 1, 1, S)
  size_t layer = 0;
  for (const auto& block : *transformer->h) {
    x = block->as<BlockImpl>()->forward(x, &cache, layer++, mask);
  }
  return lm_head(transformer->ln_f(x).select(1, 0));                    // (B, V)
}

torch::Tensor GPTImpl::cached_hidden(const torch::Tensor& idx, KVCache& cache) {
  check_idx(*this, idx);
  if (idx.size(0) != cache.batch()) {
    throw InputError(fmt::format("idx has {} rows but the KV cache holds {}", idx.size(0),
                                 cache.batch()));
  }
  if (cache.length() + idx.size(1) > config.block_size()) {
    throw InputError(fmt::format(
        "{} new positions after the {} cached ones pass block_size {}; crop the context and "
        "clear the cache", idx.size(1), cache.length(), config.block_size()));
  }
  return hidden(idx, &cache);                            // (B, T, C)
}

}  // namespace gpt2
