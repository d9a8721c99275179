// GPT's incremental decoding over a KV cache (gpt.h): the positions a cache
// holds are not run again, in the model's KVCache or a caller's store.
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

torch::Tensor GPTImpl::forward_hidden(const torch::Tensor& idx, const torch::Tensor& positions,
                                      KVStore& store, const torch::Tensor& mask) {
  const torch::Device here = lm_head->weight.device();
  const auto describe = [](const torch::Tensor& t) {
    return t.defined() ? c10::str(c10::toString(t.scalar_type()), " ", t.sizes(), " on ",
                                  t.device())
                       : std::string("an undefined tensor");
  };
  if (!idx.defined() || idx.dim() != 2 || idx.scalar_type() != torch::kLong ||
      idx.device() != here) {
    throw InputError(fmt::format("forward_hidden takes idx (B, T) int64 on {}, got {}",
                                 here.str(), describe(idx)));
  }
  if (!positions.defined() || !positions.sizes().equals(idx.sizes()) ||
      positions.scalar_type() != torch::kLong || positions.device() != here) {
    throw InputError(fmt::format("forward_hidden takes positions {} int64 on {}, as idx, got {}",
                                 c10::str(idx.sizes()), here.str(), describe(positions)));
  }
  if (mask.defined() && (mask.dim() != 4 || mask.scalar_type() != torch::kBool ||
                         mask.device() != here || mask.size(2) != idx.size(1) ||
                         (mask.size(0) != 1 && mask.size(0) != idx.size(0)))) {
    throw InputError(fmt::format("forward_hidden takes a mask ({} or 1, 1, {}, S) bool on {}, "
                                 "got {}", idx.size(0), idx.size(1), here.str(), describe(mask)));
  }
  ops::ThreadScope threads;
  return run_blocks(embed_checked(idx, positions), &store, mask);  // (B, T, C)
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
