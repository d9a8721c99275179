#include "apps/gpt2/common/model_flags.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <fmt/ostream.h>

#include <algorithm>
#include <ostream>

#include "gpt2/io/model_source.h"

namespace gpt2::app {
namespace {

// The command's seed when none is given, so that a run is repeatable.
constexpr uint64_t kDefaultSeed = 1337;

std::string flag_of(const Field& f, bool negated) {
  return fmt::format("--{}{}", negated ? "no-" : "", f.flag);
}

}  // namespace

std::vector<CLI::Option*> ModelFlags::add_to(CLI::App& app, const std::vector<std::string>& skip) {
  std::vector<CLI::Option*> added;
  added.push_back(app.add_option("--preset", preset, "Model sizes to start from")
                      ->check(CLI::IsMember(preset_choices))
                      ->capture_default_str());
  GPTConfig defaults;
  defaults.init().seed(kDefaultSeed);
  for (const auto& [field, text] : field_texts(defaults)) {
    const std::string key = field.key;
    if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
    if (text == "true" || text == "false") {
      // A switch: --no-bias turns off what defaults on, --x turns on.
      const bool negated = text == "true";
      added.push_back(app.add_flag_callback(
          flag_of(field, negated), [this, key, negated] { set(key, negated ? "false" : "true"); },
          fmt::format("{}: {} (default {})", field.help, negated ? "off" : "on",
                      negated ? "on" : "off")));
      continue;
    }
    added.push_back(
        app.add_option_function<std::string>(
               flag_of(field, false), [this, key](const std::string& value) { set(key, value); },
               fmt::format("{} (default: {})", field.help,
                           field.architecture || key == "dropout" ? "the preset's" : text))
            ->type_name("VALUE"));
  }
  return added;
}

ModelFlags& ModelFlags::set(const std::string& key, const std::string& text) {
  overrides.emplace_back(key, text);
  return *this;
}

GPTConfig ModelFlags::config() const { return config_from(GPTConfig::preset(preset)); }

bool ModelFlags::has(const std::string& key) const {
  return std::any_of(overrides.begin(), overrides.end(),
                     [&key](const auto& o) { return o.first == key; });
}

GPTConfig ModelFlags::config_from(GPTConfig base) const {
  GPTConfig c = std::move(base);
  c.init().seed(kDefaultSeed);
  for (const auto& [key, text] : overrides) {
    const auto fields = field_texts(c);
    auto field = std::find_if(fields.begin(), fields.end(),
                              [&key = key](const auto& f) { return key == f.first.key; });
    const std::string shown =
        field == fields.end() ? key : flag_of(field->first, false);
    set_field(c, key, text, shown);
  }
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
