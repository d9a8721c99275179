#include <fmt/format.h>

#include <optional>
#include <type_traits>

#include "gpt2/io/checkpoint/checkpoint_fields.h"

namespace gpt2::detail {
namespace {

void write_field(torch::serialize::OutputArchive& meta, const ConfigField& f, int64_t v) {
  meta.write(f.key, v);
}
void write_field(torch::serialize::OutputArchive& meta, const ConfigField& f, bool v) {
  meta.write(f.key, v);
}
void write_field(torch::serialize::OutputArchive& meta, const ConfigField& f, double v) {
  meta.write(f.key, v);
}
template <class Enum, class = std::enable_if_t<std::is_enum_v<Enum>>>
void write_field(torch::serialize::OutputArchive& meta, const ConfigField& f, Enum v) {
  meta.write(f.key, to_string(v));
}
void write_field(torch::serialize::OutputArchive& meta, const ConfigField& f,
                 const std::optional<uint64_t>& v) {
  meta.write(f.presence_key, v.has_value());
  meta.write(f.key, static_cast<int64_t>(v.value_or(0)));
}

// Reads one attribute, naming the field when it is missing or of the wrong type.
const PValue& attribute(const PValue& meta, const char* key, PValue::Kind kind) {
  const PValue* v = meta_field(meta, key, kind);
  if (!v) throw std::runtime_error(fmt::format("it has no {} field", key));
  return *v;
}
void read_field(const PValue& meta, const ConfigField& f, int64_t& v) {
  v = attribute(meta, f.key, PValue::Kind::kInt).i;
}
void read_field(const PValue& meta, const ConfigField& f, bool& v) {
  v = attribute(meta, f.key, PValue::Kind::kBool).b;
}
void read_field(const PValue& meta, const ConfigField& f, double& v) {
  v = attribute(meta, f.key, PValue::Kind::kFloat).f;
}
void read_field(const PValue& meta, const ConfigField& f, Gelu& v) {
  v = gelu_from_string(attribute(meta, f.key, PValue::Kind::kString).s);
}
void read_field(const PValue& meta, const ConfigField& f, ResidualScale& v) {
  v = residual_scale_from_string(attribute(meta, f.key, PValue::Kind::kString).s);
}
void read_field(const PValue& meta, const ConfigField& f, std::optional<uint64_t>& v) {
  v.reset();
  if (attribute(meta, f.presence_key, PValue::Kind::kBool).b) {
    v = static_cast<uint64_t>(attribute(meta, f.key, PValue::Kind::kInt).i);
  }
}
}  // namespace

const PValue* meta_field(const PValue& meta, const char* key, PValue::Kind kind) {
  const PValue* v = meta.get(key);
  if (v && v->kind != kind) {
    PValue want;
    want.kind = kind;
    throw std::runtime_error(fmt::format("its {} field is a {}, expected {}", key, v->describe(),
                                         want.describe()));
  }
  return v;
}

void write_config(torch::serialize::OutputArchive& meta, const GPTConfig& config) {
  for_each_field(config, [&meta](const ConfigField& f, const auto& v) { write_field(meta, f, v); });
}

GPTConfig read_config(const PValue& meta) {
  GPTConfig config;
  for_each_field(config, [&meta](const ConfigField& f, auto& v) { read_field(meta, f, v); });
  return config;
}

}  // namespace gpt2::detail
