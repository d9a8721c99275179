#include "gpt2/io/checkpoint/checkpoint_fields.h"

#include <fmt/format.h>

#include <stdexcept>
#include <type_traits>

namespace gpt2::detail {

void write_fields(torch::serialize::OutputArchive& meta, const StoredFields& fields) {
  for (const auto& [key, value] : fields) {
    std::visit([&meta, &key = key](const auto& v) { meta.write(key, c10::IValue(v)); }, value);
  }
}

void write_module(torch::serialize::OutputArchive& meta, const char* key, const StoredFields& fields) {
  torch::serialize::OutputArchive module;
  write_fields(module, fields);
  meta.write(key, module);
}

StoredFields read_fields(const PValue& meta) {
  StoredFields out;
  for (const auto& [key, v] : meta.entries) {
    switch (v->kind) {
      case PValue::Kind::kInt: out.emplace_back(key, v->i); break;
      case PValue::Kind::kBool: out.emplace_back(key, v->b); break;
      case PValue::Kind::kFloat: out.emplace_back(key, v->f); break;
      case PValue::Kind::kString: out.emplace_back(key, v->s); break;
      default: break;  // tensors, dicts, modules: not table fields
    }
  }
  return out;
}

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

}  // namespace gpt2::detail
