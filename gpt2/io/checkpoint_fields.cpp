#include <fmt/format.h>

#include <optional>
#include <type_traits>

#include "gpt2/io/detail/checkpoint_fields.h"

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

// Reads one attribute, naming the field when its type is wrong.
c10::IValue attribute(const torch::jit::Module& meta, const char* key, const char* type,
                      bool (c10::IValue::*is)() const) {
  if (!meta.hasattr(key)) throw std::runtime_error(fmt::format("it has no {} field", key));
  c10::IValue v = meta.attr(key);
  if (!(v.*is)()) {
    throw std::runtime_error(fmt::format("its {} field is a {}, expected {}", key,
                                         v.tagKind(), type));
  }
  return v;
}
void read_field(const torch::jit::Module& meta, const ConfigField& f, int64_t& v) {
  v = attribute(meta, f.key, "int", &c10::IValue::isInt).toInt();
}
void read_field(const torch::jit::Module& meta, const ConfigField& f, bool& v) {
  v = attribute(meta, f.key, "bool", &c10::IValue::isBool).toBool();
}
void read_field(const torch::jit::Module& meta, const ConfigField& f, double& v) {
  v = attribute(meta, f.key, "float", &c10::IValue::isDouble).toDouble();
}
void read_field(const torch::jit::Module& meta, const ConfigField& f, Gelu& v) {
  v = gelu_from_string(attribute(meta, f.key, "string", &c10::IValue::isString).toStringRef());
}
void read_field(const torch::jit::Module& meta, const ConfigField& f, ResidualScale& v) {
  v = residual_scale_from_string(
      attribute(meta, f.key, "string", &c10::IValue::isString).toStringRef());
}
void read_field(const torch::jit::Module& meta, const ConfigField& f, std::optional<uint64_t>& v) {
  v.reset();
  if (attribute(meta, f.presence_key, "bool", &c10::IValue::isBool).toBool()) {
    v = static_cast<uint64_t>(attribute(meta, f.key, "int", &c10::IValue::isInt).toInt());
  }
}
}  // namespace

void write_config(torch::serialize::OutputArchive& meta, const GPTConfig& config) {
  for_each_field(config, [&meta](const ConfigField& f, const auto& v) { write_field(meta, f, v); });
}

GPTConfig read_config(const torch::jit::Module& meta) {
  GPTConfig config;
  for_each_field(config, [&meta](const ConfigField& f, auto& v) { read_field(meta, f, v); });
  return config;
}

}  // namespace gpt2::detail
