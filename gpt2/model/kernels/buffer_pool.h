#pragma once
/// Large buffers of gpt2's own kernels, kept for reuse.
///
/// glibc gives every block over 32 MB its own mapping and unmaps it when the
/// block is freed, so a buffer of that size allocated afresh each training
/// step is faulted in page by page each step: for the 124M model the
/// logits, their gradient and the tied matrix's gradient are about 60,000
/// pages a step. The kernels (products, cross-entropy) take blocks of 16 MB
/// and more from this pool instead: a block its tensor no longer holds
/// waits here for the next request of its size, so a step reuses the last
/// step's blocks. Only the kernels' own blocks are kept; how the rest of
/// the process frees memory stays as the app set it (keep_freed_memory()
/// in gpt2/runtime/runtime.h is that process-wide policy).
///
/// The blocks kept free are capped, by default at an eighth of the memory
/// the process may use (usable_memory()); a block that would pass the cap
/// is freed at once.

#include <cstdint>

namespace gpt2 {

/// Bytes held free for reuse, and in how many blocks.
struct KernelMemory {
  int64_t free_bytes = 0;
  int64_t free_blocks = 0;
  /// The most free_bytes may reach.
  int64_t cap_bytes = 0;
};
KernelMemory kernel_memory();

/// Frees every block held for reuse (blocks tensors still hold stay theirs
/// and come back when freed, up to the cap).
void release_kernel_memory();

/// Sets the cap on the bytes held free; 0 keeps nothing (each block is freed
/// as its tensor goes), -1 restores the default. Lowering it frees blocks
/// down to the new cap. Throws gpt2::Error below -1.
void set_kernel_memory_cap(int64_t bytes);

}  // namespace gpt2
