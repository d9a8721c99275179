#include "gpt2/model/attention.h"

#include <tuple>

#include "gpt2/ops/ops.h"

namespace gpt2 {

torch::Tensor causal_mask(int64_t T, int64_t past, const torch::Device& device) {
  if (T <= 1) return {};
  // Query i sits at position past + i and may not see keys after it.
  return torch::ones({T, past + T}, torch::TensorOptions(torch::kBool).device(device))
      .triu_(past + 1);                                                  // (T, past + T)
}

torch::Tensor padded_causal_mask(int64_t T, int64_t past, const torch::Tensor& pads) {
  const auto opts = pads.options();
  const auto key = torch::arange(past + T, opts).view({1, 1, past + T});
  const auto query = torch::arange(past, past + T, opts).view({1, T, 1});
  const auto pad = pads.view({-1, 1, 1});
  return (key.gt(query) | (key.lt(pad) & key.ne(query))).unsqueeze(1);  // (B, 1, T, past + T)
}

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GPTConfig& config_)
    : config(config_) {
  reset();
}

void CausalSelfAttentionImpl::reset() {
  const int64_t c = config.n_embd();
  c_attn = register_module("c_attn", Linear(LinearOptions(c, 3 * c).bias(config.bias())));
  c_proj = register_module(
      "c_proj", Linear(LinearOptions(c, c).bias(config.bias()).residual_scale(true)));
  attn_dropout = register_module("attn_dropout", torch::nn::Dropout(config.dropout()));
  resid_dropout = register_module("resid_dropout", torch::nn::Dropout(config.dropout()));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x, KVCache* cache,
                                              size_t layer, const torch::Tensor& mask) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  const int64_t nh = config.n_head(), hs = C / nh;
  const int64_t past = cache ? cache->length() : 0;
  auto qkv = c_attn(x).split(C, /*dim=*/2);                  // 3 x (B, T, C)
  auto q = qkv[0].view({B, T, nh, hs}).transpose(1, 2);      // (B, nh, T, hs)
  auto k = qkv[1].view({B, T, nh, hs}).transpose(1, 2);      // (B, nh, T, hs)
  auto v = qkv[2].view({B, T, nh, hs}).transpose(1, 2);      // (B, nh, T, hs)
  if (cache) std::tie(k, v) = cache->append(layer, k, v);    // (B, nh, past + T, hs)

  const double p = attn_dropout->is_training() ? attn_dropout->options.p() : 0.0;
  const auto future = mask.defined() ? mask : causal_mask(T, past, x.device());
  auto y = ops::attention(q, k, v, future, p);               // (B, nh, T, hs)
  y = y.transpose(1, 2).contiguous().view({B, T, C});        // (B, T, C)
  return resid_dropout(c_proj(y));                           // (B, T, C)
}

}  // namespace gpt2
