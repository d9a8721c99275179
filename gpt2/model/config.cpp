#include "gpt2/model/config.h"

#include <fmt/format.h>

#include <c10/util/Exception.h>

#include <cmath>
#include <limits>

#include "gpt2/error.h"
#include "gpt2/fields/table.h"

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
  if (n_layer() > kMaxLayers) {
    throw ConfigError(fmt::format("n_layer must be at most {} (GPT-2 XL has 48; deeper models take "
                                  "LibTorch's checkpoint writer minutes), got {}",
                                  kMaxLayers, n_layer()));
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
  // 128-bit, so that no size a config can hold overflows before the check.
  __extension__ typedef __int128 Wide;
  const Wide c = n_embd();
  const Wide b = bias() ? 1 : 0;
  const Wide layer_norm = c + b * c;
  const Wide attention = (c * 3 * c + b * 3 * c) + (c * c + b * c);
  const Wide mlp = (c * 4 * c + b * 4 * c) + (4 * c * c + b * c);
  const Wide block = 2 * layer_norm + attention + mlp;
  const Wide wpe = Wide(block_size()) * c;
  // wte and lm_head are one matrix, counted once.
  const Wide total = Wide(vocab_size()) * c + wpe + Wide(n_layer()) * block + layer_norm;
  if (total > std::numeric_limits<int64_t>::max()) {
    throw ConfigError(fmt::format(
        "a model with n_layer {}, n_embd {}, vocab_size {}, block_size {} has more than 2^63 "
        "parameters", n_layer(), n_embd(), vocab_size(), block_size()));
  }
  return static_cast<int64_t>(non_embedding ? total - wpe : total);
}

int64_t GPTConfig::residual_count() const {
  switch (init().residual()) {
    case ResidualScale::kTwoPerBlock: return 2 * n_layer();
    case ResidualScale::kOnePerBlock: return n_layer();
    case ResidualScale::kNone: return 1;
    case ResidualScale::kZero: return 0;
  }
  TORCH_CHECK(false, "unhandled ResidualScale");
}

double GPTConfig::residual_std() const {
  if (init().residual() == ResidualScale::kZero) return 0.0;
  return init().std() / std::sqrt(static_cast<double>(residual_count()));
}

template <>
const std::vector<std::pair<Gelu, std::string>>& names<Gelu>() {
  static const std::vector<std::pair<Gelu, std::string>> kNames = {
      {Gelu::kTanh, "tanh"}, {Gelu::kExact, "exact"}};
  return kNames;
}

template <>
const std::vector<std::pair<ResidualScale, std::string>>& names<ResidualScale>() {
  static const std::vector<std::pair<ResidualScale, std::string>> kNames = {
      {ResidualScale::kTwoPerBlock, "2n"},
      {ResidualScale::kOnePerBlock, "n"},
      {ResidualScale::kNone, "none"},
      {ResidualScale::kZero, "zero"}};
  return kNames;
}

namespace {

template <class Enum>
Enum parse_name(const std::string& name, const char* what) {
  Enum v{};
  if (!parse_field(name, v)) {
    throw ConfigError(fmt::format("unknown {} '{}'; expected {}", what, name, field_form(v)));
  }
  return v;
}

}  // namespace

std::string to_string(Gelu gelu) { return field_text(gelu); }
std::string to_string(ResidualScale scale) { return field_text(scale); }

Gelu gelu_from_string(const std::string& name) { return parse_name<Gelu>(name, "GELU variant"); }

ResidualScale residual_scale_from_string(const std::string& name) {
  return parse_name<ResidualScale>(name, "residual scale");
}

const char* torch_gelu_approximate(Gelu gelu) { return gelu == Gelu::kTanh ? "tanh" : "none"; }

std::string to_string(const GPTConfig& c) { return fields_to_string(c); }

}  // namespace gpt2
