#include "apps/gpt2/common/field_flags.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>

#include "gpt2/error.h"

namespace gpt2::app {
namespace {

bool all_are(const std::vector<std::string>& texts, const std::string& text) {
  return std::all_of(texts.begin(), texts.end(), [&text](const auto& t) { return t == text; });
}

// What --help says the default is.
std::string default_text(const FlagSpec& spec, const std::map<std::string, std::string>& notes) {
  const auto note = notes.find(spec.field.key);
  if (note != notes.end()) return note->second;
  return all_are(spec.defaults, spec.defaults.at(0)) ? spec.defaults[0] : "the preset's";
}

}  // namespace

FieldFlags& FieldFlags::set(const std::string& key, const std::string& text,
                            const std::string& flag, bool is_switch) {
  given.push_back({key, text, flag, is_switch});
  return *this;
}

bool FieldFlags::has(const std::string& key) const {
  return std::any_of(given.begin(), given.end(), [&key](const Given& g) { return g.key == key; });
}

std::string FieldFlags::spelled(const Given& g) {
  return g.is_switch ? g.flag : fmt::format("{} {}", g.flag, g.text);
}

std::vector<CLI::Option*> add_field_flags(CLI::App& app, const std::vector<FlagSpec>& specs,
                                          FieldFlags& into, const std::vector<std::string>& skip,
                                          const std::map<std::string, std::string>& default_notes) {
  std::vector<CLI::Option*> added;
  for (const FlagSpec& spec : specs) {
    const std::string key = spec.field.key;
    if (!spec.field.flag || std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
    if (spec.is_switch) {
      // A switch: --no-bias turns off what defaults on, --x turns on.
      const bool negated = all_are(spec.defaults, "true");
      const std::string flag = fmt::format("--{}{}", negated ? "no-" : "", spec.field.flag);
      added.push_back(app.add_flag_callback(
          flag, [&into, key, flag, negated] { into.set(key, negated ? "false" : "true", flag, true); },
          fmt::format("{}: {} (default {})", spec.field.help, negated ? "off" : "on",
                      negated ? "on" : "off")));
      continue;
    }
    const std::string flag = fmt::format("--{}", spec.field.flag);
    added.push_back(
        app.add_option_function<std::string>(
               flag, [&into, key, flag](const std::string& text) { into.set(key, text, flag); },
               fmt::format("{} (default: {})", spec.field.help, default_text(spec, default_notes)))
            ->type_name("VALUE")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast));
  }
  return added;
}

CLI::Option* add_integer_flag(CLI::App& app, const std::string& name, uint64_t& value,
                              const std::string& help) {
  CLI::Option* option = app.add_option_function<std::string>(
      name,
      [&value, name](const std::string& text) {
        if (!parse_field(text, value)) {
          throw ConfigError(fmt::format("{} must be {}, got '{}'", name, field_form(value), text));
        }
      },
      help);
  option->default_str(std::to_string(value))->type_name("UINT");
  return option;
}

}  // namespace gpt2::app
