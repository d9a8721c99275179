#include "gpt2/config.h"

#include <fmt/format.h>

#include <c10/util/Exception.h>

#include <cmath>

#include "gpt2/error.h"

namespace gpt2 {
namespace {

struct Preset {
  const char* name;
  int64_t n_layer, n_head, n_embd;
};

// Sizes of OpenAI's released checkpoints (GPT-2 paper, table 2; the models'
// hparams.json). All share vocab_size 50257 and block_size 1024.
constexpr Preset kPresets[] = {
    {"gpt2", 12, 12, 768},
    {"gpt2-medium", 24, 16, 1024},
    {"gpt2-large", 36, 20, 1280},
    {"gpt2-xl", 48, 25, 1600},
};

}  // namespace

GPTConfig GPTConfig::preset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) {
      return GPTConfig().n_layer(p.n_layer).n_head(p.n_head).n_embd(p.n_embd);
    }
  }
  throw ConfigError(fmt::format("unknown preset '{}'; known presets: {}", name,
                                fmt::join(preset_names(), ", ")));
}

std::vector<std::string> GPTConfig::preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

void GPTConfig::validate() const {
  const std::pair<const char*, int64_t> sizes[] = {
      {"block_size", block_size()}, {"vocab_size", vocab_size()},
      {"n_layer", n_layer()},       {"n_head", n_head()},
      {"n_embd", n_embd()},
  };
  for (const auto& [name, value] : sizes) {
    if (value <= 0) {
      throw ConfigError(fmt::format("{} must be positive, got {}", name, value));
    }
  }
  if (n_embd() % n_head() != 0) {
    throw ConfigError(fmt::format("n_embd {} is not divisible by n_head {}",
                                  n_embd(), n_head()));
  }
  if (!(dropout() >= 0.0 && dropout() < 1.0)) {
    throw ConfigError(fmt::format("dropout must be in [0, 1), got {}", dropout()));
  }
  if (!(init().std() > 0.0 && std::isfinite(init().std()))) {
    throw ConfigError(fmt::format("init std must be positive and finite, got {}",
                                  init().std()));
  }
  if (!(init().wpe_std() > 0.0 && std::isfinite(init().wpe_std()))) {
    throw ConfigError(fmt::format(
        "init wpe_std must be positive and finite, got {}", init().wpe_std()));
  }
}

int64_t GPTConfig::num_parameters(bool non_embedding) const {
  const int64_t c = n_embd();
  const int64_t b = bias() ? 1 : 0;
  const int64_t layer_norm = c + b * c;
  const int64_t attention = (c * 3 * c + b * 3 * c) + (c * c + b * c);
  const int64_t mlp = (c * 4 * c + b * 4 * c) + (4 * c * c + b * c);
  const int64_t block = 2 * layer_norm + attention + mlp;
  const int64_t wpe = block_size() * c;
  // wte and lm_head are one matrix, counted once.
  const int64_t total = vocab_size() * c + wpe + n_layer() * block + layer_norm;
  return non_embedding ? total - wpe : total;
}

int64_t GPTConfig::residual_count() const {
  switch (init().residual()) {
    case ResidualScale::kTwoPerBlock: return 2 * n_layer();
    case ResidualScale::kOnePerBlock: return n_layer();
    case ResidualScale::kNone: return 1;
  }
  TORCH_CHECK(false, "unhandled ResidualScale");
}

double GPTConfig::residual_std() const {
  return init().std() / std::sqrt(static_cast<double>(residual_count()));
}

std::string to_string(Gelu gelu) {
  return gelu == Gelu::kTanh ? "tanh" : "exact";
}

Gelu gelu_from_string(const std::string& name) {
  for (auto g : {Gelu::kTanh, Gelu::kExact}) {
    if (name == to_string(g)) return g;
  }
  throw ConfigError(fmt::format("unknown GELU variant '{}'; expected tanh or exact", name));
}

std::string to_string(ResidualScale scale) {
  switch (scale) {
    case ResidualScale::kTwoPerBlock: return "2n";
    case ResidualScale::kOnePerBlock: return "n";
    case ResidualScale::kNone: return "none";
  }
  TORCH_CHECK(false, "unhandled ResidualScale");
}

ResidualScale residual_scale_from_string(const std::string& name) {
  for (auto s : {ResidualScale::kTwoPerBlock, ResidualScale::kOnePerBlock,
                 ResidualScale::kNone}) {
    if (name == to_string(s)) return s;
  }
  throw ConfigError(fmt::format(
      "unknown residual scale '{}'; expected 2n, n or none", name));
}

std::string to_string(const GPTConfig& c) {
  const InitOptions& i = c.init();
  return fmt::format(
      "GPTConfig(block_size={}, vocab_size={}, n_layer={}, n_head={}, n_embd={}, "
      "bias={}, dropout={}, gelu={}, init=(std={}, wpe_std={}, residual={}, seed={}))",
      c.block_size(), c.vocab_size(), c.n_layer(), c.n_head(), c.n_embd(),
      c.bias(), c.dropout(), to_string(c.gelu()), i.std(), i.wpe_std(),
      to_string(i.residual()), i.seed() ? std::to_string(*i.seed()) : "none");
}

}  // namespace gpt2
