#include "gpt2/model/config.h"

#include <fmt/format.h>
#include <unistd.h>

#include <c10/util/Exception.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>

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

void check_fits_in_memory(const GPTConfig& config, int64_t bytes_per_parameter) {
  const double need = static_cast<double>(config.num_parameters()) * bytes_per_parameter;
  const double have =
      static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  if (have > 0 && need > have) {
    throw ConfigError(fmt::format(
        "the model's {} parameters need {:.1f} GB at {} bytes each, more than this machine's "
        "{:.1f} GB of memory", config.num_parameters(), need / 1e9, bytes_per_parameter,
        have / 1e9));
  }
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
      {ResidualScale::kNone, "none"}};
  return kNames;
}

namespace {

template <class Enum>
std::string name_of(Enum value) {
  for (const auto& [v, name] : names<Enum>()) {
    if (v == value) return name;
  }
  TORCH_CHECK(false, "enum value ", static_cast<int>(value), " has no name");
}

template <class Enum>
Enum parse_name(const std::string& name, const char* what) {
  std::vector<std::string> known;
  for (const auto& [v, n] : names<Enum>()) {
    if (n == name) return v;
    known.push_back(n);
  }
  throw ConfigError(
      fmt::format("unknown {} '{}'; expected one of {}", what, name, fmt::join(known, ", ")));
}

// The text form of a field's value, as to_string(GPTConfig) and messages show it.
std::string value_text(int64_t v) { return std::to_string(v); }
std::string value_text(bool v) { return v ? "true" : "false"; }
std::string value_text(double v) { return fmt::format("{}", v); }
std::string value_text(Gelu v) { return name_of(v); }
std::string value_text(ResidualScale v) { return name_of(v); }
std::string value_text(const std::optional<uint64_t>& v) {
  return v ? std::to_string(*v) : "none";
}

// Parses `text` into `v` (the field's type); false if it is not that form.
bool parse_text(const std::string& text, int64_t& v) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  return ec == std::errc() && ptr == end;
}
bool parse_text(const std::string& text, bool& v) {
  if (text != "true" && text != "false") return false;
  v = text == "true";
  return true;
}
bool parse_text(const std::string& text, double& v) {
  char* end = nullptr;
  errno = 0;
  v = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() && errno == 0 && std::isfinite(v);
}
template <class Enum, class = std::enable_if_t<std::is_enum_v<Enum>>>
bool parse_text(const std::string& text, Enum& v) {
  for (const auto& [value, name] : names<Enum>()) {
    if (name == text) {
      v = value;
      return true;
    }
  }
  return false;
}
bool parse_text(const std::string& text, std::optional<uint64_t>& v) {
  if (text == "none") {
    v.reset();
    return true;
  }
  uint64_t seed = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, seed);
  if (ec != std::errc() || ptr != end) return false;
  v = seed;
  return true;
}

std::string expected_form(int64_t) { return "an integer"; }
std::string expected_form(bool) { return "true or false"; }
std::string expected_form(double) { return "a finite number"; }
template <class Enum, class = std::enable_if_t<std::is_enum_v<Enum>>>
std::string expected_form(Enum) {
  std::vector<std::string> known;
  for (const auto& item : names<Enum>()) known.push_back(item.second);
  return "one of " + fmt::format("{}", fmt::join(known, ", "));
}
std::string expected_form(const std::optional<uint64_t>&) {
  return "an integer in [0, 2^64) or none";
}

}  // namespace

void set_field(GPTConfig& config, const std::string& key, const std::string& text,
               const std::string& shown_as) {
  bool known = false;
  for_each_field(config, [&](const ConfigField& f, auto& value) {
    if (key != f.key) return;
    known = true;
    auto parsed = value;
    if (!parse_text(text, parsed)) {
      throw ConfigError(
          fmt::format("{} must be {}, got '{}'", shown_as, expected_form(value), text));
    }
    value = parsed;
  });
  if (!known) throw ConfigError(fmt::format("GPTConfig has no field '{}'", key));
}

std::string to_string(Gelu gelu) { return name_of(gelu); }
std::string to_string(ResidualScale scale) { return name_of(scale); }

Gelu gelu_from_string(const std::string& name) { return parse_name<Gelu>(name, "GELU variant"); }

ResidualScale residual_scale_from_string(const std::string& name) {
  return parse_name<ResidualScale>(name, "residual scale");
}

const char* torch_gelu_approximate(Gelu gelu) { return gelu == Gelu::kTanh ? "tanh" : "none"; }

std::vector<std::pair<ConfigField, std::string>> field_texts(const GPTConfig& c) {
  std::vector<std::pair<ConfigField, std::string>> out;
  for_each_field(c, [&out](const ConfigField& f, const auto& v) {
    out.emplace_back(f, value_text(v));
  });
  return out;
}

std::string to_string(const GPTConfig& c) {
  std::vector<std::string> fields;
  for (const auto& [f, text] : field_texts(c)) fields.push_back(fmt::format("{}={}", f.key, text));
  return fmt::format("GPTConfig({})", fmt::join(fields, ", "));
}

}  // namespace gpt2
