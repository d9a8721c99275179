#include "gpt2/model/block.h"

namespace gpt2 {

BlockImpl::BlockImpl(const GPTConfig& config_) : config(config_) { reset(); }

void BlockImpl::reset() {
  const auto norm = LayerNormOptions(config.n_embd()).bias(config.bias());
  ln_1 = register_module("ln_1", LayerNorm(norm));
  attn = register_module("attn", CausalSelfAttention(config));
  ln_2 = register_module("ln_2", LayerNorm(norm));
  mlp = register_module("mlp", MLP(config));
}

torch::Tensor BlockImpl::forward(torch::Tensor x, KVCache* cache, size_t layer,
                                 const torch::Tensor& mask) {
  x = x + attn->forward(ln_1(x), cache, layer, mask);  // (B, T, C)
  x = x + mlp(ln_2(x));                          // (B, T, C)
  return x;
}

}  // namespace gpt2
