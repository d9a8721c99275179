#pragma once
/// What the process computes on: the BLAS library actually loaded and its
/// threads, and torch's own thread pool. Speed on CPU is decided here
/// (reference BLAS runs matmuls ~26x slower than OpenBLAS on this project's
/// machines), so the apps print it.

#include <cstdint>
#include <string>

namespace gpt2::app {

/// A snapshot of the compute runtime.
struct RuntimeInfo {
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
};

/// Reads /proc/self/maps and asks the loaded libraries.
RuntimeInfo runtime_info();

/// Makes glibc keep freed memory for reuse instead of handing it back to the
/// kernel. By default every block over 32 MB is its own mapping, unmapped
/// when freed, so each training step of the 124M model faults about 137,000
/// fresh pages back in (logits, the tied matrix's gradients, activations);
/// with every block in the heap and the heap never trimmed, about 4,000,
/// for about 150 MB more peak RSS (measured with `gpt2 bench train`). Left
/// alone when the user set MALLOC_MMAP_MAX_ or MALLOC_TRIM_THRESHOLD_.
/// Returns whether it changed anything.
bool keep_freed_memory();

/// OpenBLAS kernels this CPU can run that beat the ones OpenBLAS picked, or
/// "" when it picked well. Debian 12's OpenBLAS 0.3.21 does not know some
/// newer Xeons (this project's machine among them) and falls back to its SSE3
/// "Prescott" kernels: 2048^2 products ran about 5x slower than with
/// "SkylakeX" there, and the peer's 124M forward in `gpt2 bench train` 4x.
/// OPENBLAS_CORETYPE=<name> makes a process use them.
std::string better_blas_core(const RuntimeInfo& info);

/// Threads for each of `local_world_size` processes on this machine:
/// OMP_NUM_THREADS when set, else the cores this process may run on
/// (its affinity mask: `taskset -c 0` gives 1) shared out, at least 1.
int default_threads(int64_t local_world_size = 1);

/// `BLAS OpenBLAS (Prescott kernels), 2 threads; products onednn; torch
/// intra-op threads 2`: the runtime line of train and init-study train.
std::string runtime_line(const RuntimeInfo& info);

/// Sets torch's intra-op pool and OpenBLAS's own pool (which
/// at::set_num_threads does not reach) to `threads` each.
void set_compute_threads(int threads);

}  // namespace gpt2::app
