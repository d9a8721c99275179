#pragma once
// Helpers shared by the tests: tiny configs and the name oracle.

#include <string>
#include <vector>

#include "gpt2/config.h"

namespace gpt2::testing {

/// 2 layers, n_embd 32: the default for tests whose number does not need
/// the real size.
inline GPTConfig tiny_config() {
  return GPTConfig().block_size(16).vocab_size(96).n_layer(2).n_head(4).n_embd(32);
}

/// nanoGPT's / Hugging Face's parameter names for n_layer blocks, written out
/// independently of the library (bias = true).
inline std::vector<std::string> nanogpt_names(int n_layer) {
  std::vector<std::string> names = {"transformer.wte.weight", "transformer.wpe.weight"};
  for (int i = 0; i < n_layer; ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    for (const char* leaf :
         {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
          "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
          "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"}) {
      names.push_back(h + leaf);
    }
  }
  names.insert(names.end(), {"transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight"});
  return names;
}

/// Whether a parameter name is a residual projection, by name: the oracle the
/// init tests hold the flag-driven init against.
inline bool is_residual_projection(const std::string& name) {
  return name.find(".c_proj.weight") != std::string::npos;
}

}  // namespace gpt2::testing
