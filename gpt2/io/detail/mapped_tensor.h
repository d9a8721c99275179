#pragma once
// Tensors over a model file's own pages, for the readers' Mmap modes
// (load_options.h; internal to gpt2/io).

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>

#include "gpt2/file/mapped_file.h"
#include "gpt2/io/load_options.h"

namespace gpt2::detail {

/// A model file as a reader parses it, and whether its tensors may view it.
struct ModelFileMap {
  /// The file's bytes: read-only for Mmap::kOff, else copy-on-write.
  std::shared_ptr<const MappedFile> file;
  /// Whether tensors view `file` (tensor_in_file) rather than copy out of
  /// it: kOn always; kAuto when, mapped in full, at least half of it lies
  /// in 2 MiB pages (and read-only, copied, where the kernel refuses a
  /// private writable mapping, as under strict overcommit).
  bool view = false;
};

/// Maps `path` for a reader under `mmap`.
ModelFileMap map_model_file(const std::string& path, Mmap mmap);

/// A contiguous tensor of `sizes` and `dtype` over the bytes at `at` inside
/// `file`, which stays mapped while the tensor's storage lives. Undefined
/// when `at` is not aligned to the dtype's element size: the caller copies
/// those bytes instead. gpt2::Error if the bytes do not lie inside the file
/// (a reader's own bug: each checks its sizes against the file first).
at::Tensor tensor_in_file(const std::shared_ptr<const MappedFile>& file, const char* at,
                          at::IntArrayRef sizes, at::ScalarType dtype);

}  // namespace gpt2::detail
