#include "gpt2/model/mlp.h"

#include "gpt2/ops/ops.h"

namespace gpt2 {

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

}  // namespace gpt2
