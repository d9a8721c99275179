#include "gpt2/model/modules.h"

#include <torch/autograd.h>

#include <ostream>
#include <tuple>

namespace gpt2 {

namespace {
thread_local bool defer_init = false;
}  // namespace

DeferInit::DeferInit() : previous_(defer_init) { defer_init = true; }
DeferInit::~DeferInit() { defer_init = previous_; }
bool DeferInit::active() { return defer_init; }

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) {
  reset();
}

void LinearImpl::reset() {
  weight = register_parameter(
      "weight", ops::empty({options.out_features(), options.in_features()}));
  if (options.bias()) {
    bias = register_parameter("bias", torch::empty({options.out_features()}));
  } else {
    bias = torch::Tensor();
  }
  if (!DeferInit::active()) reset_parameters();
}

void LinearImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  weight.normal_(0.0, InitOptions().std());
  if (bias.defined()) bias.zero_();
}

torch::Tensor LinearImpl::forward(const torch::Tensor& input) {
  return ops::linear(input, weight, bias, packed_);
}

void LinearImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "gpt2::Linear(in_features=" << options.in_features()
         << ", out_features=" << options.out_features() << ", bias=" << options.bias()
         << ", residual_scale=" << options.residual_scale() << ")";
}

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options_) : options(options_) {
  reset();
}

void LayerNormImpl::reset() {
  weight = register_parameter("weight", torch::empty({options.ndim()}));
  if (options.bias()) {
    bias = register_parameter("bias", torch::empty({options.ndim()}));
  } else {
    bias = torch::Tensor();
  }
  if (!DeferInit::active()) reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  weight.fill_(1.0);
  if (bias.defined()) bias.zero_();
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& input) {
  return ops::layer_norm(input, weight, bias, options.eps());
}

void LayerNormImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "gpt2::LayerNorm(" << options.ndim()
         << ", eps=" << options.eps() << ", bias=" << options.bias() << ")";
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

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x, KVStore* cache,
                                              size_t layer, const torch::Tensor& mask) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  const int64_t nh = config.n_head(), hs = C / nh;
  auto qkv = c_attn(x).split(C, /*dim=*/2);                  // 3 x (B, T, C)
  auto q = qkv[0].view({B, T, nh, hs}).transpose(1, 2);      // (B, nh, T, hs)
  auto k = qkv[1].view({B, T, nh, hs}).transpose(1, 2);      // (B, nh, T, hs)
  auto v = qkv[2].view({B, T, nh, hs}).transpose(1, 2);      // (B, nh, T, hs)
  if (cache) std::tie(k, v) = cache->append(layer, k, v);    // (B, nh, S, hs)

  const double p = attn_dropout->is_training() ? attn_dropout->options.p() : 0.0;
  const int64_t past = k.size(2) - T;
  const bool is_causal = !mask.defined() && past == 0;
  const auto future = mask.defined() || is_causal ? mask : causal_mask(T, past, x.device());
  auto y = ops::attention(q, k, v, future, p, is_causal);    // (B, nh, T, hs)
  y = y.transpose(1, 2).contiguous().view({B, T, C});        // (B, T, C)
  return resid_dropout(c_proj(y));                           // (B, T, C)
}

MLPImpl::MLPImpl(const GPTConfig& config_) : config(config_) { reset(); }

void MLPImpl::reset() {
  const int64_t c = config.n_embd();
  c_fc = register_module("c_fc", Linear(LinearOptions(c, 4 * c).bias(config.bias())));
  c_proj = register_module(
      "c_proj", Linear(LinearOptions(4 * c, c).bias(config.bias()).residual_scale(true)));
  dropout = register_module("dropout", torch::nn::Dropout(config.dropout()));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) {
  auto h = ops::gelu(c_fc(x), torch_gelu_approximate(config.gelu()));  // (B, T, 4C)
  return dropout(c_proj(h));  // (B, T, C)
}

BlockImpl::BlockImpl(const GPTConfig& config_) : config(config_) { reset(); }

void BlockImpl::reset() {
  const auto norm = LayerNormOptions(config.n_embd()).bias(config.bias());
  ln_1 = register_module("ln_1", LayerNorm(norm));
  attn = register_module("attn", CausalSelfAttention(config));
  ln_2 = register_module("ln_2", LayerNorm(norm));
  mlp = register_module("mlp", MLP(config));
}

torch::Tensor BlockImpl::forward(torch::Tensor x, KVStore* cache, size_t layer,
                                 const torch::Tensor& mask) {
  x = x + attn->forward(ln_1(x), cache, layer, mask);  // (B, T, C)
  x = x + mlp(ln_2(x));                          // (B, T, C)
  return x;
}

}  // namespace gpt2
