#pragma once
// Checkpoint internals shared with the fuzzer. GPTConfig as attributes of a checkpoint's "gpt2" metadata module, one per
// field of the table (for_each_field): int64, bool, double, enums by name,
// an optional seed as a presence flag plus its uint64 bits in an int64.

#include <torch/csrc/jit/api/module.h>
#include <torch/serialize/output-archive.h>

#include <iosfwd>
#include <string>

#include "gpt2/io/checkpoint.h"
#include "gpt2/model/config.h"

namespace gpt2::detail {

/// Writes every field of `config` into `meta`.
void write_config(torch::serialize::OutputArchive& meta, const GPTConfig& config);

/// Reads every field; throws std::runtime_error naming a field that is
/// missing or of the wrong type (ConfigError for a bad enum spelling).
GPTConfig read_config(const torch::jit::Module& meta);

/// load_checkpoint reading the archive from `in` (the file `path` when
/// null); `path` names it in errors. For the fuzzer, which has bytes.
Checkpoint load_checkpoint(const std::string& path, std::istream* in);

}  // namespace gpt2::detail
