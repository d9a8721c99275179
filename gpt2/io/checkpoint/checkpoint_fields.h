#pragma once
// GPTConfig as attributes of a checkpoint's "gpt2" metadata module, one per
// field of the table (for_each_field): int64, bool, double, enums by name,
// an optional seed as a presence flag plus its uint64 bits in an int64.

#include <torch/serialize/output-archive.h>

#include <string>
#include <string_view>

#include "gpt2/io/checkpoint/pickle.h"
#include "gpt2/model/config.h"

namespace gpt2::detail {

/// Writes every field of `config` into `meta`.
void write_config(torch::serialize::OutputArchive& meta, const GPTConfig& config);

/// Metadata attribute `key` of `kind`, or nullptr when absent; throws
/// std::runtime_error naming the field when it has another kind.
const PValue* meta_field(const PValue& meta, const char* key, PValue::Kind kind);

/// Reads every field from the metadata object; throws std::runtime_error
/// naming a field that is missing or of the wrong type (ConfigError for a
/// bad enum spelling).
GPTConfig read_config(const PValue& meta);

}  // namespace gpt2::detail
