#pragma once
// The loaders' passes over bytes on every kernel thread (internal to
// gpt2/io): the gate's checksums and the copies into fresh tensors. The
// threads also share the page faults of fresh memory, most of a first
// load's time.

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>

namespace gpt2::detail {

/// zlib's CRC-32 of the `n` bytes at `data`, in 1 MiB pieces on the kernel
/// threads (libdeflate, PCLMUL), the pieces' CRC-32s combined in order
/// (zlib's crc32_combine). With `copy_to`, each piece is first copied there
/// and its CRC-32 taken from the copy while it is in cache.
uint32_t crc32_on_threads(const void* data, size_t n, void* copy_to = nullptr);

/// memcpy(to, from, n) in 1 MiB pieces on the kernel threads.
void copy_on_threads(void* to, const void* from, size_t n);

/// The `n` bytes of `fd` at `offset` into `to`, by pread in 1 MiB pieces on
/// the kernel threads, with their CRC-32 in `crc` when given (each piece's
/// taken as it arrives, in cache). 0 when all came; else the errno of the
/// first failed read, or -1 where the file ended before them.
int read_on_threads(int fd, uint64_t offset, void* to, size_t n, uint32_t* crc = nullptr);

/// The transpose of a 2-D tensor as a new contiguous one: in 64 x 64 tiles on
/// the kernel threads for 2- and 4-byte elements (a Conv1D weight of Hugging
/// Face's GPT-2, read at memory speed), torch's t().contiguous() otherwise.
at::Tensor transposed_on_threads(const at::Tensor& t);

}  // namespace gpt2::detail
