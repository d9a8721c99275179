#pragma once
// The pool's allocation call (internal to gpt2/model; buffer_pool.h is the
// public side).

#include <ATen/core/Tensor.h>

namespace gpt2::detail {

/// Blocks of at least this many bytes come from the pool.
constexpr int64_t kPooledBytes = int64_t{16} << 20;

/// Whether the environment sets glibc's malloc policy: MALLOC_MMAP_THRESHOLD_,
/// MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_MAX_, MALLOC_TOP_PAD_, or glibc.malloc
/// in GLIBC_TUNABLES. The library then leaves glibc as the user set it.
bool malloc_tuned_by_environment();

/// An uninitialized contiguous float32 CPU tensor of `sizes`: from the pool
/// when it holds kPooledBytes or more, else torch::empty's.
at::Tensor empty_pooled(at::IntArrayRef sizes);

}  // namespace gpt2::detail
