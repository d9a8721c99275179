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
/// step's blocks. Only the kernels' own blocks are kept here; the rest of
/// the step's memory is glibc's, under the heap policy below (keep_freed_memory()
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

/// glibc's policy for the rest of the step's memory. By default glibc maps
/// each block over its threshold (128 KB, rising with use to at most 32 MB)
/// on its own and hands the heap's free top back to the kernel once it
/// passes twice that threshold, so the step's blocks of a few MB were
/// faulted in afresh every step: about 36,000 pages a 124M step in a
/// default-settings app on an AMD EPYC (Zen 5), the step 1.2 s against 0.8.
/// At the pool's first block the kernels bound it instead (kBounded):
/// blocks up to 32 MB come from the heap (glibc's own threshold tops out
/// there), and up to 256 MB of the heap's free top is kept, not handed
/// back. Larger blocks are still mapped and unmapped on their own. Nothing
/// is changed (kApps) where the app chose first: a malloc tunable in the
/// environment (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_,
/// MALLOC_MMAP_MAX_, MALLOC_TOP_PAD_, or glibc.malloc in GLIBC_TUNABLES),
/// keep_freed_memory(), or leave_heap_policy_to_app() called before.
enum class HeapPolicy { kUntouched, kBounded, kApps };
HeapPolicy heap_policy();
/// "glibc's default", "bounded" or "the app's".
const char* to_string(HeapPolicy policy);

/// Leaves glibc's heap policy to the app from here on (kApps); call it
/// before the first training step. Called after, it leaves glibc with the
/// bounded settings until the app sets its own.
void leave_heap_policy_to_app();

}  // namespace gpt2
