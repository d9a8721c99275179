#include "gpt2/generate/kv_cache.h"

#include <c10/util/Exception.h>

#include <tuple>

#include "gpt2/error.h"

namespace gpt2 {

void check_kv_matches(const torch::Tensor& slots, const torch::Tensor& k) {
  check_input(k.size(1) == slots.size(1) && k.size(3) == slots.size(3) &&
                  k.dtype() == slots.dtype() && k.device() == slots.device(),
              "the KV cache holds ", slots.size(1), " heads of ", slots.size(3), " ", slots.dtype(),
              " on ", slots.device(), "; the model gives ", k.size(1), " of ", k.size(3), " ",
              k.dtype(), " on ", k.device(),
              ": make it with the model's config and its parameters' "
              "options");
}

std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> allocate_kv(
    const GPTConfig& config, int64_t rows, const torch::TensorOptions& options, bool zeros,
    const char* unit) {
  const int64_t nh = config.n_head(), hs = config.n_embd() / config.n_head();
  const int64_t block = config.block_size();
  std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> kv;
  try {
    for (int64_t i = 0; i < config.n_layer(); ++i) {
      for (auto* side : {&kv.first, &kv.second}) {
        side->push_back(zeros ? torch::zeros({rows, nh, block, hs}, options)
                              : torch::empty({rows, nh, block, hs}, options));
      }
    }
  } catch (const c10::Error&) {  // sizes that overflow, or memory that ran out
    const double bytes = 2.0 * config.n_layer() * rows * block * config.n_embd();
    check_input(false, "a KV cache of ", rows, " ", unit, " (",
                bytes * options.dtype().itemsize() / 1e9, " GB) cannot be allocated");
  }
  return kv;
}

KVCache::KVCache(const GPTConfig& config, int64_t batch, const torch::TensorOptions& options)
    : capacity_(config.block_size()), batch_(batch) {
  check_input(batch >= 1, "KVCache batch must be at least 1, got ", batch);
  std::tie(keys_, values_) = allocate_kv(config, batch, options, /*zeros=*/false, "rows");
}

std::pair<torch::Tensor, torch::Tensor> KVCache::append(size_t layer, const torch::Tensor& k,
                                                        const torch::Tensor& v) {
  check_input(layer < keys_.size(), "KVCache has ", keys_.size(), " layers, asked for ", layer);
  check_kv_matches(keys_[layer], k);
  const int64_t t = k.size(2), end = length_ + t;
  check_input(k.size(0) == batch_, "KVCache holds ", batch_, " rows, got ", k.size(0));
  check_input(end <= capacity_, "KVCache holds ", capacity_, " positions; ", length_,
              " are filled and ", t, " more do not fit");
  keys_[layer].narrow(2, length_, t).copy_(k);
  values_[layer].narrow(2, length_, t).copy_(v);
  return {keys_[layer].narrow(2, 0, end), values_[layer].narrow(2, 0, end)};
}

void KVCache::advance(int64_t t) {
  check_input(t >= 0 && length_ + t <= capacity_, "KVCache cannot advance by ", t, " from ",
              length_, " of ", capacity_);
  length_ += t;
}

void KVCache::truncate(int64_t length) {
  check_input(length >= 0 && length <= length_, "KVCache cannot truncate to ", length, " of ",
              length_, " filled");
  length_ = length;
}

namespace {

// The final norm's output (B, T, C) of idx's T positions after the cache's.
torch::Tensor cached_hidden(GPTImpl& model, const torch::Tensor& idx, KVCache& cache) {
  check_token_ids(idx, model.config);
  const int64_t B = idx.size(0), T = idx.size(1), past = cache.length();
  check_input(B == cache.batch(), "idx has ", B, " rows but the KV cache holds ", cache.batch());
  check_input(past + T <= model.config.block_size(), T, " new positions after the ", past,
              " cached ones pass block_size ", model.config.block_size(),
              "; crop the context and clear the cache");
  const auto positions = torch::arange(past, past + T, idx.options()).expand({B, T});
  // No mask: each block's attention masks causally over the cached keys.
  auto x = model.forward_hidden(idx, positions, cache, torch::Tensor());  // (B, T, C)
  cache.advance(T);
  return x;
}

}  // namespace

torch::Tensor forward_cached(GPTImpl& model, const torch::Tensor& idx, KVCache& cache) {
  auto x = cached_hidden(model, idx, cache);             // (B, T, C)
  return model.lm_head(x.select(1, x.size(1) - 1));      // (B, V)
}

torch::Tensor forward_cached_all(GPTImpl& model, const torch::Tensor& idx, KVCache& cache) {
  return model.lm_head(cached_hidden(model, idx, cache));  // (B, T, V)
}

}  // namespace gpt2
