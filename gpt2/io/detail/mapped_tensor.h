#pragma once
// A model file's bytes in memory and tensors over them, for the readers'
// Mmap modes (model_source.h; internal to gpt2/io).

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <string_view>

#include "gpt2/file/mapped_file.h"
#include "gpt2/io/model_source.h"

namespace gpt2::detail {

/// A model file's bytes as a reader parses them, and how its tensors are
/// made from them.
struct ModelFileBytes {
  std::string_view bytes;
  /// Keeps `bytes` mapped (and `fd` open) while anything holds it; tensors
  /// viewing the bytes do.
  std::shared_ptr<const void> holder;
  /// Whether tensors view `bytes` (tensor_in_file), the file mapped
  /// copy-on-write.
  bool view = false;
  /// Otherwise, where it is open: a descriptor on the same file, from which
  /// a reader reads each tensor (read_on_threads), with no page fault on
  /// the file's side. -1: copy out of `bytes`.
  int fd = -1;
  /// With `fd`: a block as large as the file, 2 MiB aligned, that tensors
  /// are read into at their own offsets and then view (read_tensor). The
  /// kernel gives it pages only where something is read, so a file's other
  /// bytes (a checkpoint's optimizer state, Hugging Face's transposed
  /// weights) cost no memory; the tensors over it hold it. One block per
  /// load instead of a fresh mapping per tensor (docs/cpu-kernels.md).
  std::shared_ptr<char> block;
};

/// `path`'s bytes for a reader under `mmap`:
/// - kOff: mapped read-only for parsing, and open for reading the tensors;
/// - kOn: mapped copy-on-write, viewed;
/// - kAuto: as kOn where a sample of the mapping lies in 2 MiB pages
///   (huge_pages_sampled), else as kOff; as kOff too where the kernel
///   refuses a private writable mapping (strict overcommit).
ModelFileBytes model_file_bytes(const std::string& path, Mmap mmap);

/// Whether kAuto views `file` (mapped copy-on-write): it maps a sample of up
/// to 8 of its 2 MiB pieces, spread evenly (MADV_POPULATE_READ), and the
/// kernel mapped at least half of the sample as 2 MiB pages. The kernel does
/// where the page cache holds that part of the file in 2 MiB folios, which
/// follows how the file was written or last read in (docs/speed.md). A file
/// under 2 MiB never is.
bool huge_pages_sampled(const MappedFile& file);

/// A contiguous tensor of `sizes` and `dtype` over the bytes at `at` inside
/// `file.bytes`, which stay mapped while the tensor's storage lives.
/// Undefined when `at` is not aligned to the dtype's element size: the
/// caller copies those bytes instead. gpt2::Error if the bytes do not lie
/// inside the file (a reader's own bug: each checks its sizes first).
at::Tensor tensor_in_file(const ModelFileBytes& file, const char* at, at::IntArrayRef sizes,
                          at::ScalarType dtype);

/// The tensor of `sizes` and `dtype` whose bytes lie at `at` inside
/// `file.bytes`, read into `file.block` at the same offset and viewing it.
/// Undefined where there is no block, the tensor is under kLargeBytes (its
/// 2 MiB page of the block would hold little else that is read: Hugging
/// Face's biases lie between transposed weights), or `at` is not aligned to
/// the dtype's element size; the caller reads those into storage of their
/// own. FileError naming `path` as read_bytes.
at::Tensor read_tensor(const ModelFileBytes& file, const char* at, at::IntArrayRef sizes,
                       at::ScalarType dtype, const std::string& path);

/// The tensor over the bytes at `at` inside `file.bytes` as `file` makes
/// them: a view of the file's pages (tensor_in_file) where `file.view`,
/// else read into its block (read_tensor). Undefined where neither can: the
/// caller reads or copies into storage of its own (read_bytes).
at::Tensor tensor_from_file(const ModelFileBytes& file, const char* at, at::IntArrayRef sizes,
                            at::ScalarType dtype, const std::string& path);

/// Where the bytes at `at` inside `file.bytes` go in `file.block`.
inline char* in_block(const ModelFileBytes& file, const char* at) {
  return file.block.get() + (at - file.bytes.data());
}

/// A tensor over bytes already read to `to` = in_block(file, at), holding
/// the block; undefined where read_tensor's rules say so.
at::Tensor tensor_in_block(const ModelFileBytes& file, char* to, at::IntArrayRef sizes,
                           at::ScalarType dtype);

/// `n` bytes at `at` inside `file.bytes` into `to`: read from `file.fd`
/// where it is open (read_on_threads), else copied on the kernel threads.
/// FileError naming `path` where the read fails or the file ends early (it
/// changed after it was parsed).
void read_bytes(const ModelFileBytes& file, const char* at, void* to, size_t n,
                const std::string& path);

}  // namespace gpt2::detail
