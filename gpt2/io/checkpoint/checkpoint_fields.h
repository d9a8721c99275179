#pragma once
// A field table (gpt2/fields/table.h) as typed attributes of a
// checkpoint's metadata module: each StoredValue as an int, bool, float or
// str attribute. GPTConfig's fields are attributes of the "gpt2" module,
// the trainer's options those of its "train_options" sub-module.

#include <torch/serialize/output-archive.h>

#include "gpt2/io/checkpoint/pickle.h"
#include "gpt2/fields/fields.h"

namespace gpt2::detail {

/// Writes each of `fields` into `meta` as an attribute of its type.
void write_fields(torch::serialize::OutputArchive& meta, const StoredFields& fields);
/// Writes `fields` as the attributes of a sub-module `key` of `meta`.
void write_module(torch::serialize::OutputArchive& meta, const char* key, const StoredFields& fields);

/// The int, bool, float and str attributes of the metadata object `meta`, in
/// order (load_fields reads a table from them and names what is missing).
StoredFields read_fields(const PValue& meta);

/// Metadata attribute `key` of `kind`, or nullptr when absent; throws
/// std::runtime_error naming the field when it has another kind.
const PValue* meta_field(const PValue& meta, const char* key, PValue::Kind kind);

}  // namespace gpt2::detail
