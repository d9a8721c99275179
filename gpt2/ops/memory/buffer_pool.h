#pragma once
// The kernels' pool of large blocks (internal to gpt2/ops; the knobs are in
// gpt2/ops/settings.h). glibc gives every block over its mmap threshold a
// mapping of its own and unmaps it when freed, so a buffer of that size made
// afresh each training step is faulted in page by page each step. The
// kernels' own outputs of kPooledBytes or more come from this pool instead:
// a block its tensor no longer holds waits for the next request of its
// size, up to the cap (set_kernel_memory_cap). Only the kernels' own blocks
// are kept; glibc's policy for the rest of the process is the app's.

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace gpt2::detail {

/// Blocks of at least this many bytes come from the pool.
constexpr int64_t kPooledBytes = int64_t{16} << 20;

/// An uninitialized contiguous float32 CPU tensor of `sizes`: from the pool
/// when it holds kPooledBytes or more, else torch::empty's.
at::Tensor empty_pooled(at::IntArrayRef sizes);

}  // namespace gpt2::detail
