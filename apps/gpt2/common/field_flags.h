#pragma once
// One flag per field of any field table (gpt2/fields/table.h):
// `--n-layer 6`, `--lr 1e-3`, a bool as a switch (`--no-bias` where it
// defaults to true, `--bias` where it defaults to false). The model flags of
// every command and the training flags of `gpt2 train` both come from here.

#include <CLI/App.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "gpt2/fields/table.h"

namespace gpt2::app {

/// The flags given for the fields of one table.
struct FieldFlags {
  /// One flag as given.
  struct Given {
    /// The field's Field::key.
    std::string key;
    /// Its value as set_field reads it: "6", "1e-3", "false" for --no-bias.
    std::string text;
    /// The flag as spelled: "--n-layer", "--no-bias".
    std::string flag;
    /// Whether the flag is a switch (it takes no value).
    bool is_switch = false;
  };
  /// Every flag given: from the command line in the table's order (CLI11
  /// runs the callbacks so), then those set().
  std::vector<Given> given;

  /// Records a flag as the command line would (`set("n_layer", "3", "--n-layer")`).
  FieldFlags& set(const std::string& key, const std::string& text, const std::string& flag,
                  bool is_switch = false);
  /// Whether a flag of the field `key` was given.
  bool has(const std::string& key) const;
  /// The flag with its value, as a user would write it: "--n-layer 6", "--no-bias".
  static std::string spelled(const Given& given);

  /// Sets each given field of `table` in order (set_field: ConfigError naming the flag).
  template <class Table>
  void apply_to(Table& table) const {
    for (const Given& g : given) set_field(table, g.key, g.text, g.flag);
  }
};

/// What one flag is made from: the field, whether it is a bool, and its
/// default's text under each preset a command starts from.
struct FlagSpec {
  /// The field (its flag, help and key).
  Field field;
  /// Whether it is a bool, offered as a switch.
  bool is_switch = false;
  /// Its value as text in each preset.
  std::vector<std::string> defaults;
};

/// The flag specs of a table's fields, with each field's default in each of
/// `presets` (the tables a command may start from; at least one).
template <class Table>
std::vector<FlagSpec> flag_specs(const std::vector<Table>& presets) {
  std::vector<FlagSpec> specs;
  for_each_field(presets.at(0), [&specs](const Field& f, const auto& v) {
    specs.push_back({f, std::is_same_v<std::decay_t<decltype(v)>, bool>, {}});
  });
  for (const Table& preset : presets) {
    const auto texts = field_texts(preset);
    for (size_t i = 0; i < texts.size(); ++i) specs[i].defaults.push_back(texts[i].second);
  }
  return specs;
}

/// Adds a flag to `app` for each spec whose field has one and whose key is
/// not in `skip`; what is given is recorded in `into`, which `app` must
/// not outlive. A value flag given twice keeps the last. The help is the
/// field's with its default: the value where every preset agrees, "the
/// preset's" where they differ, or `default_notes[key]`. A bool is `--no-x`
/// when every preset has it true, else `--x`. Returns the options added.
std::vector<CLI::Option*> add_field_flags(CLI::App& app, const std::vector<FlagSpec>& specs,
                                          FieldFlags& into,
                                          const std::vector<std::string>& skip = {},
                                          const std::map<std::string, std::string>& default_notes = {});

/// A flag of one integer outside any field table (`generate --seed`), read
/// by the fields' parser rather than CLI11's, which wraps "-5" into an
/// unsigned seed and clamps some values past the type: text it does not take
/// whole is a ConfigError `--seed must be an integer in [0, 2^64), got '-5'`.
CLI::Option* add_integer_flag(CLI::App& app, const std::string& name, uint64_t& value,
                              const std::string& help);

}  // namespace gpt2::app
