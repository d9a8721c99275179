#pragma once
/// What the process computes on, and the one call that sets it up for speed.
///
/// An app that links gpt2 and calls nothing keeps glibc's heap policy and
/// torch's thread counts: the library's own kernels run on a team of their
/// own for each call (KernelTeam, gpt2/ops/settings.h) and take their large
/// buffers from a pool of their own, and change nothing process-wide. The
/// process-wide settings that make training faster are one call,
/// configure_runtime(), which the gpt2 command makes at start:
///
///   gpt2::configure_runtime();  // threads, freed-memory policy
///
/// It sets torch's intra-op pool (which runs clipping and the app's own
/// ops), OpenBLAS's own pool and gpt2's kernel threads to one count, and
/// makes glibc keep freed memory (keep_freed_memory()). docs/speed.md
/// measures what it gains.

#include <cstdint>
#include <string>

#include "gpt2/ops/settings.h"

namespace gpt2 {

/// A snapshot of the compute runtime.
struct RuntimeInfo {
  /// The LibTorch the library was built against: "1.13.0", "2.6.0", ...
  std::string torch_version;
  /// Real path of the loaded BLAS shared library, or "unknown".
  std::string blas_library;
  /// "OpenBLAS", "reference", "MKL", "BLIS" or "unknown", from blas_library.
  std::string blas_kind;
  /// OpenBLAS's thread count, or -1 when the BLAS does not report one.
  int blas_threads = -1;
  /// OpenBLAS's kernel set ("SkylakeX", "Haswell", "Prescott", ...), or "".
  std::string blas_core;
  /// at::get_num_threads(): torch's intra-op pool.
  int torch_threads = 0;
  /// gpt2::kernel_threads(): the model's own kernels.
  int kernel_threads = 0;
  /// The float32 product path and why it was chosen.
  MatmulBackend products = MatmulBackend::kTorch;
  std::string products_reason;
  /// glibc's heap policy and the huge-page choice (gpt2/ops/settings.h) as
  /// they stand.
  HeapPolicy heap = HeapPolicy::kUntouched;
  HugePagesChoice huge_pages;
};

/// Reads /proc/self/maps and asks the loaded libraries. Throws gpt2::Error
/// where GPT2_HUGE_PAGES holds a value huge_pages_choice() does not know.
RuntimeInfo runtime_info();

/// `LibTorch 2.6.0; BLAS OpenBLAS (Prescott kernels), 2 threads; products onednn (OpenBLAS
/// runs its generic Prescott kernels), 2 threads; torch intra-op threads 2;
/// heap glibc's default; huge pages on (4 MiB faulted in ...)`.
std::string runtime_line(const RuntimeInfo& info);

/// Threads for each of `local_world_size` processes on this machine:
/// usable_cores() shared out, at least 1.
int default_threads(int64_t local_world_size = 1);

/// Sets torch's intra-op pool, OpenBLAS's own pool (which
/// at::set_num_threads does not reach) and gpt2's kernel threads to
/// `threads` each.
void set_compute_threads(int threads);

/// Makes glibc keep freed memory for reuse instead of handing it back to the
/// kernel (mallopt: no block gets its own mapping, the heap's top is never
/// handed back), so the training step's buffers of a few MB are not faulted
/// in afresh every step. Records the heap policy as the app's
/// (leave_heap_policy_to_app()), and changes nothing when the environment
/// set a malloc tunable (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_,
/// MALLOC_MMAP_MAX_, MALLOC_TOP_PAD_, glibc.malloc in GLIBC_TUNABLES).
/// Returns whether it changed anything.
bool keep_freed_memory();

/// OpenBLAS kernels this CPU can run that beat the ones OpenBLAS picked, or
/// "" when it picked well. Debian 12's OpenBLAS 0.3.21 does not know some
/// newer Xeons and falls back to its SSE3 "Prescott" kernels;
/// OPENBLAS_CORETYPE=<name> makes a process use better ones (the Python
/// peer of `gpt2 bench train` is run both ways).
std::string better_blas_core(const RuntimeInfo& info);

/// What configure_runtime() sets.
struct RuntimeOptions {
  /// Threads of torch's pool, OpenBLAS's and gpt2's kernels; 0:
  /// default_threads(local_world_size).
  int threads = 0;
  /// Processes that share this machine's cores (data-parallel ranks).
  int64_t local_world_size = 1;
  /// Whether to call keep_freed_memory().
  bool keep_freed_memory = true;
};

/// Sets the process up as the gpt2 command runs: set_compute_threads() and
/// keep_freed_memory(). Call it once at start, before the first model is
/// built. Returns the runtime as it then stands. Throws gpt2::Error for a
/// negative thread count or local_world_size below 1.
RuntimeInfo configure_runtime(const RuntimeOptions& options = {});

}  // namespace gpt2
