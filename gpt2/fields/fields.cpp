#include "gpt2/fields/fields.h"
#include "gpt2/fields/table.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <stdexcept>

#include "gpt2/error.h"

namespace gpt2 {
namespace {

// std::from_chars over the whole text: no sign for unsigned, no leading
// space or '+', no locale, ERANGE for a value out of range.
template <class T>
bool parse_whole(const std::string& text, T& v) {
  const char* end = text.data() + text.size();
  T parsed{};
  auto [ptr, ec] = std::from_chars(text.data(), end, parsed);
  if (text.empty() || ec != std::errc() || ptr != end) return false;
  v = parsed;
  return true;
}

// The TorchScript type name of a stored value, as the checkpoint gate names them.
const char* type_name(const StoredValue& v) {
  constexpr const char* kNames[] = {"int", "bool", "float", "str"};
  return kNames[v.index()];
}

const StoredValue* find_stored(const StoredFields& in, const char* key) {
  for (const auto& [k, v] : in) {
    if (k == key) return &v;
  }
  return nullptr;
}

// The attribute `key` of type T; ConfigError naming the field otherwise.
template <class T>
const T& stored(const StoredFields& in, const char* key) {
  const StoredValue* v = find_stored(in, key);
  if (!v) throw ConfigError(fmt::format("it has no {} field", key));
  if (!std::holds_alternative<T>(*v)) {
    throw ConfigError(fmt::format("its {} field is a {}, expected {}", key, type_name(*v),
                                  type_name(StoredValue(T{}))));
  }
  return std::get<T>(*v);
}

}  // namespace

std::string one_of(const std::vector<std::string>& names) {
  return fmt::format("one of {}", fmt::join(names, ", "));
}

const std::string& stored_string(const StoredFields& in, const char* key) {
  return stored<std::string>(in, key);
}

void throw_bad_text(const std::string& what, const std::string& form, const std::string& text) {
  throw ConfigError(fmt::format("{} must be {}, got '{}'", what, form, text));
}

void throw_unknown_field(const char* table, const std::string& key) {
  throw ConfigError(fmt::format("{} has no field '{}'", table, key));
}

std::string fields_string(const char* table, const std::vector<std::pair<Field, std::string>>& texts) {
  std::vector<std::string> parts;
  for (const auto& [f, text] : texts) parts.push_back(fmt::format("{}={}", f.key, text));
  return fmt::format("{}({})", table, fmt::join(parts, ", "));
}

void throw_unnamed(int value) {
  throw std::logic_error(fmt::format("enum value {} has no name in names<Enum>()", value));
}

std::string field_text(int64_t v) { return std::to_string(v); }
std::string field_text(uint64_t v) { return std::to_string(v); }
std::string field_text(bool v) { return v ? "true" : "false"; }
std::string field_text(double v) { return fmt::format("{}", v); }
std::string field_text(const std::optional<uint64_t>& v) { return v ? field_text(*v) : "none"; }

bool parse_field(const std::string& text, int64_t& v) { return parse_whole(text, v); }
bool parse_field(const std::string& text, uint64_t& v) { return parse_whole(text, v); }
bool parse_field(const std::string& text, bool& v) {
  if (text != "true" && text != "false") return false;
  v = text == "true";
  return true;
}
bool parse_field(const std::string& text, double& v) {
  double parsed = 0;
  if (!parse_whole(text, parsed) || !std::isfinite(parsed)) return false;
  v = parsed;
  return true;
}
bool parse_field(const std::string& text, std::optional<uint64_t>& v) {
  if (text == "none") {
    v.reset();
    return true;
  }
  uint64_t parsed = 0;
  if (!parse_whole(text, parsed)) return false;
  v = parsed;
  return true;
}

std::string field_form(int64_t) { return "an integer"; }
std::string field_form(uint64_t) { return "an integer in [0, 2^64)"; }
std::string field_form(bool) { return "true or false"; }
std::string field_form(double) { return "a finite number"; }
std::string field_form(const std::optional<uint64_t>&) { return field_form(uint64_t{}) + " or none"; }

void store_field(const Field& f, int64_t v, StoredFields& out) { out.emplace_back(f.key, v); }
void store_field(const Field& f, uint64_t v, StoredFields& out) {
  out.emplace_back(f.key, static_cast<int64_t>(v));
}
void store_field(const Field& f, bool v, StoredFields& out) { out.emplace_back(f.key, v); }
void store_field(const Field& f, double v, StoredFields& out) { out.emplace_back(f.key, v); }
void store_field(const Field& f, const std::optional<uint64_t>& v, StoredFields& out) {
  out.emplace_back(f.presence_key, v.has_value());
  store_field(f, v.value_or(0), out);
}

void load_field(const Field& f, const StoredFields& in, int64_t& v) { v = stored<int64_t>(in, f.key); }
void load_field(const Field& f, const StoredFields& in, uint64_t& v) {
  v = static_cast<uint64_t>(stored<int64_t>(in, f.key));
}
void load_field(const Field& f, const StoredFields& in, bool& v) { v = stored<bool>(in, f.key); }
void load_field(const Field& f, const StoredFields& in, double& v) { v = stored<double>(in, f.key); }
void load_field(const Field& f, const StoredFields& in, std::optional<uint64_t>& v) {
  v.reset();
  if (stored<bool>(in, f.presence_key)) v = static_cast<uint64_t>(stored<int64_t>(in, f.key));
}

}  // namespace gpt2
