#include "apps/gpt2/common/model_flags.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <ostream>

#include "gpt2/io/model_source.h"

namespace gpt2::app {
namespace {

// The command's seed when none is given, so that a run is repeatable.
constexpr uint64_t kDefaultSeed = 1337;

}  // namespace

std::vector<CLI::Option*> ModelFlags::add_to(CLI::App& app, const std::vector<std::string>& skip) {
  std::vector<CLI::Option*> added;
  added.push_back(app.add_option("--preset", preset, "Model sizes to start from")
                      ->check(CLI::IsMember(preset_choices))
                      ->each([this](const std::string&) { preset_given = true; })
                      ->capture_default_str());
  std::vector<GPTConfig> presets;
  for (const auto& name : preset_choices) {
    presets.push_back(preset_config(name));
    presets.back().init().seed(kDefaultSeed);
  }
  for (CLI::Option* option : add_field_flags(app, flag_specs(presets), fields, skip, default_notes)) {
    added.push_back(option);
  }
  return added;
}

ModelFlags& ModelFlags::set(const std::string& key, const std::string& text) {
  const auto field = find_field(GPTConfig(), key);
  fields.set(key, text, field && field->flag ? fmt::format("--{}", field->flag) : key);
  return *this;
}

GPTConfig ModelFlags::config() const { return config_from(preset_config(preset)); }

GPTConfig ModelFlags::config_from(GPTConfig base) const {
  GPTConfig c = std::move(base);
  c.init().seed(kDefaultSeed);
  fields.apply_to(c);
  c.validate();
  return c;
}

GPT model_from(const std::string& path, const ModelFlags& flags, std::ostream& notes) {
  if (path.empty()) return GPT(flags.config());
  LoadedModel loaded = load_model_file(path);
  for (const auto& note : loaded.notes) fmt::print(notes, "note      {}\n", note);
  return loaded.model;
}

}  // namespace gpt2::app
