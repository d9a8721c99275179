#pragma once
/// The templates over a whole field table (a type with for_each_field and
/// table_name overloads, see gpt2/fields/fields.h): text form, setting a
/// field from text, to_string, the stored form, comparison. GPTConfig and
/// TrainOptions both go through these, so the two tables parse, print,
/// store and compare their fields one way.

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpt2/fields/fields.h"

namespace gpt2 {

/// Throws ConfigError "{table} has no field '{key}'".
[[noreturn]] void throw_unknown_field(const char* table, const std::string& key);
/// "GPTConfig(a=1, b=2)" from the table's name and its field texts.
std::string fields_string(const char* table, const std::vector<std::pair<Field, std::string>>& texts);

/// Each field of `table` with its value as text (`{n_layer, "12"}`), in order.
template <class Table>
std::vector<std::pair<Field, std::string>> field_texts(const Table& table) {
  std::vector<std::pair<Field, std::string>> out;
  for_each_field(table, [&out](const Field& f, const auto& v) { out.emplace_back(f, field_text(v)); });
  return out;
}

/// The field of `table` called `key`, or nullopt.
template <class Table>
std::optional<Field> find_field(const Table& table, const std::string& key) {
  std::optional<Field> found;
  for_each_field(table, [&](const Field& f, const auto&) {
    if (key == f.key) found = f;
  });
  return found;
}

/// Sets the field `key` of `table` from `text` (field_text's form). Throws
/// ConfigError "--n-layer must be an integer, got '3x'" naming `shown_as`
/// (a flag, a key), or "GPTConfig has no field 'n_layers'"; on a throw
/// `table` is unchanged.
template <class Table>
void set_field(Table& table, const std::string& key, const std::string& text,
               const std::string& shown_as) {
  bool known = false;
  for_each_field(table, [&](const Field& f, auto& value) {
    if (key != f.key) return;
    known = true;
    if (!parse_field(text, value)) throw_bad_text(shown_as, field_form(value), text);
  });
  if (!known) throw_unknown_field(table_name(table), key);
}

/// `GPTConfig(block_size=1024, vocab_size=50257, ...)`, every field.
template <class Table>
std::string fields_to_string(const Table& table) {
  return fields_string(table_name(table), field_texts(table));
}

/// Every field's attributes (store_field), in order.
template <class Table>
StoredFields stored_fields(const Table& table) {
  StoredFields out;
  for_each_field(table, [&out](const Field& f, const auto& v) { store_field(f, v, out); });
  return out;
}

/// Sets every field of `table` from `in` (load_field: ConfigError naming a
/// field that is missing or of the wrong type). Other keys in `in` are ignored.
template <class Table>
void load_fields(Table& table, const StoredFields& in) {
  for_each_field(table, [&in](const Field& f, auto& v) { load_field(f, in, v); });
}

/// A field whose value differs between two tables of one type.
struct FieldDifference {
  /// The field.
  Field field;
  /// Its value in the first table and in the second, as text.
  std::string first, second;
};

/// The fields whose values differ, in order. Values are compared, not
/// texts: a double read from "1e-3" equals one read from "0.001".
template <class Table>
std::vector<FieldDifference> field_differences(const Table& a, const Table& b) {
  std::vector<FieldDifference> out;
  size_t i = 0;
  for_each_field(a, [&](const Field& f, const auto& va) {
    size_t j = 0;
    for_each_field(b, [&](const Field&, const auto& vb) {
      if constexpr (std::is_same_v<decltype(va), decltype(vb)>) {
        if (j == i && !(va == vb)) out.push_back({f, field_text(va), field_text(vb)});
      }
      ++j;
    });
    ++i;
  });
  return out;
}

}  // namespace gpt2
