#pragma once
/// Field tables: one mechanism for every options struct whose fields are
/// listed once, as GPTConfig's (gpt2/model/config.h) and TrainOptions'
/// (gpt2/train/train_options.h). A table is any type `T` with two overloads
/// found by argument-dependent lookup:
///
///   template <class C, class V> TableVisit<C, T> for_each_field(C& table, V&& visit);
///   const char* table_name(const T&);  // "GPTConfig", for messages and to_string
///
/// where for_each_field calls `visit(Field, value)` once per field in a fixed
/// order, `value` a reference to the field (const when `table` is). Its
/// types are those the codec below knows: int64_t, uint64_t, bool, double,
/// an enum with names<Enum>(), std::optional<uint64_t>. Everything that
/// lists fields (to_string, the checkpoint's attributes, the command's
/// flags, resume checks) goes through this codec and the templates over a
/// table in gpt2/fields/table.h.

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace gpt2 {

/// What a table says about one of its fields.
struct Field {
  /// The field's name in files (checkpoint attributes) and in to_string.
  const char* key;
  /// The `gpt2` command's flag without dashes, or nullptr when it has none;
  /// a bool is a switch (`--no-<flag>` when it defaults to true, else `--<flag>`).
  const char* flag;
  /// One line for --help.
  const char* help;
  /// Whether a different value makes weights of one table unusable with the
  /// other (a model's sizes, bias, GELU); false for everything else.
  bool architecture = false;
  /// For an optional field: the stored key recording whether it is set.
  const char* presence_key = nullptr;
};

/// The return type of a table's for_each_field overload: void for `T` =
/// `Table` or const `Table`, no overload for any other type, so that each
/// table's template is its own overload:
///   template <class C, class V> TableVisit<C, GPTConfig> for_each_field(C&, V&&);
template <class T, class Table>
using TableVisit = std::enable_if_t<std::is_same_v<std::remove_const_t<T>, Table>>;

/// The one spelling of each enum value, used by the field codec, the
/// checkpoint metadata, the `gpt2` command's flags and the Python tests.
/// Specialized beside each enum (`names<Gelu>()` is {{kTanh, "tanh"}, ...}).
template <class Enum>
const std::vector<std::pair<Enum, std::string>>& names();

// ---- The codec: a field value <-> its text ---------------------------------

/// The text of a value, as to_string, --help and messages show it and
/// parse_field reads it back: `12`, `true`, `0.0006` (the shortest text that
/// reads back to the same double), an enum's name, a seed or `none`.
std::string field_text(int64_t v);
std::string field_text(uint64_t v);
std::string field_text(bool v);
std::string field_text(double v);
std::string field_text(const std::optional<uint64_t>& v);
template <class Enum, std::enable_if_t<std::is_enum_v<Enum>, int> = 0>
std::string field_text(Enum v);

/// Parses `text` (field_text's form, nothing around it) into `v`; returns
/// false, leaving `v` alone, when `text` is not that form: an integer out of
/// range, a number that is not finite, an unknown name.
bool parse_field(const std::string& text, int64_t& v);
bool parse_field(const std::string& text, uint64_t& v);
bool parse_field(const std::string& text, bool& v);
bool parse_field(const std::string& text, double& v);
bool parse_field(const std::string& text, std::optional<uint64_t>& v);
template <class Enum, std::enable_if_t<std::is_enum_v<Enum>, int> = 0>
bool parse_field(const std::string& text, Enum& v);

/// What parse_field accepts for a value of this type, for messages: "an
/// integer", "an integer in [0, 2^64)", "true or false", "a finite number",
/// "one of tanh, exact", "an integer in [0, 2^64) or none".
std::string field_form(int64_t);
std::string field_form(uint64_t);
std::string field_form(bool);
std::string field_form(double);
std::string field_form(const std::optional<uint64_t>&);
template <class Enum, std::enable_if_t<std::is_enum_v<Enum>, int> = 0>
std::string field_form(Enum);

// ---- Stored form: a field as typed attributes --------------------------------

/// A value as a file stores it: int, bool, float or str (TorchScript's types).
using StoredValue = std::variant<int64_t, bool, double, std::string>;
/// A table's values as attributes, in its order: (key, value).
using StoredFields = std::vector<std::pair<std::string, StoredValue>>;

/// Appends the attributes of one field to `out`: int64_t, bool and double
/// as themselves, uint64_t as its bits in an int64, an enum as its name, an
/// optional as Field::presence_key (bool) plus the value's bits (0 if unset).
void store_field(const Field& f, int64_t v, StoredFields& out);
void store_field(const Field& f, uint64_t v, StoredFields& out);
void store_field(const Field& f, bool v, StoredFields& out);
void store_field(const Field& f, double v, StoredFields& out);
void store_field(const Field& f, const std::optional<uint64_t>& v, StoredFields& out);
template <class Enum, std::enable_if_t<std::is_enum_v<Enum>, int> = 0>
void store_field(const Field& f, Enum v, StoredFields& out);

/// Reads one field back from `in` (store_field's form). Throws ConfigError
/// "it has no n_layer field", "its n_layer field is a str, expected int" or,
/// for a bad name, "its gelu field must be one of tanh, exact, got 'erf'".
void load_field(const Field& f, const StoredFields& in, int64_t& v);
void load_field(const Field& f, const StoredFields& in, uint64_t& v);
void load_field(const Field& f, const StoredFields& in, bool& v);
void load_field(const Field& f, const StoredFields& in, double& v);
void load_field(const Field& f, const StoredFields& in, std::optional<uint64_t>& v);
template <class Enum, std::enable_if_t<std::is_enum_v<Enum>, int> = 0>
void load_field(const Field& f, const StoredFields& in, Enum& v);

/// "one of tanh, exact".
std::string one_of(const std::vector<std::string>& names);
/// The str attribute `key` of `in`; ConfigError when it is missing or not a str.
const std::string& stored_string(const StoredFields& in, const char* key);
/// Throws ConfigError "{what} must be {form}, got '{text}'".
[[noreturn]] void throw_bad_text(const std::string& what, const std::string& form,
                                 const std::string& text);
/// Throws std::logic_error: an enum value missing from names<Enum>().
[[noreturn]] void throw_unnamed(int value);

template <class Enum, std::enable_if_t<std::is_enum_v<Enum>, int>>
std::string field_text(Enum v) {
  for (const auto& [value, name] : names<Enum>()) {
    if (value == v) return name;
  }
  throw_unnamed(static_cast<int>(v));
}

template <class Enum, std::enable_if_t<std::is_enum_v<Enum>, int>>
bool parse_field(const std::string& text, Enum& v) {
  for (const auto& [value, name] : names<Enum>()) {
    if (name == text) {
      v = value;
      return true;
    }
  }
  return false;
}

template <class Enum, std::enable_if_t<std::is_enum_v<Enum>, int>>
std::string field_form(Enum) {
  std::vector<std::string> known;
  for (const auto& item : names<Enum>()) known.push_back(item.second);
  return one_of(known);
}

template <class Enum, std::enable_if_t<std::is_enum_v<Enum>, int>>
void store_field(const Field& f, Enum v, StoredFields& out) {
  out.emplace_back(f.key, field_text(v));
}

template <class Enum, std::enable_if_t<std::is_enum_v<Enum>, int>>
void load_field(const Field& f, const StoredFields& in, Enum& v) {
  const std::string& text = stored_string(in, f.key);
  if (!parse_field(text, v)) {
    throw_bad_text("its " + std::string(f.key) + " field", field_form(v), text);
  }
}

// ---- Any enum's text, by names<Enum>() ------------------------------------

/// names<Enum>()'s spelling of `v`: to_string of every enum of the library.
template <class Enum, std::enable_if_t<std::is_enum_v<Enum>, int> = 0>
std::string enum_name(Enum v) {
  return field_text(v);
}

/// The value names<Enum>() spells `text`. Throws ConfigError "{what} must be
/// one of a, b, got '{text}'".
template <class Enum, std::enable_if_t<std::is_enum_v<Enum>, int> = 0>
Enum enum_from_name(const std::string& text, const std::string& what) {
  Enum v{};
  if (!parse_field(text, v)) throw_bad_text(what, field_form(v), text);
  return v;
}

}  // namespace gpt2
