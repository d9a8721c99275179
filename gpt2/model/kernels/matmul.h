#pragma once
/// The model's float32 matrix products on the CPU: oneDNN's sgemm or the
/// system BLAS, chosen per machine by a rule a benchmark backs. Where oneDNN
/// runs AVX-512, the forward's x W^T of 16 rows or more goes to its matmul
/// primitive instead of sgemm (brgemm kernels: faster on that product;
/// onednn_matmul.cpp).
///
/// LibTorch sends torch::mm and torch::linear to the system BLAS (Debian 12:
/// OpenBLAS 0.3.21). gpt2::linear can instead call oneDNN's sgemm (libdnnl,
/// a dependency of Debian's libtorch) through an autograd function whose
/// forward and backward are three oneDNN products, and the fused attention
/// (fused_attention.h) runs on the same sgemm. Which is faster depends on the
/// machine: on an Intel Xeon where OpenBLAS does not know the CPU and falls
/// back to SSE3 "Prescott" kernels, oneDNN ran 2048^2 products 4-6x faster;
/// where OpenBLAS has the CPU's kernels the two are close on one product,
/// and the BLAS path costs a second thread pool beside torch's (the two spin
/// against each other on a small machine). choose_matmul_backend() is the
/// rule; `gpt2 bench products` times both paths on the model's own shapes in
/// one run and says whether the rule picked the faster (docs/speed.md has
/// the figures per kind of CPU). The results of the two agree to float
/// rounding; only the summation order differs. Export is unaffected: the
/// TorchScript program is written, not traced, and uses torch's own ops.
///
/// Threads. oneDNN's sgemm and the fused attention run on an OpenMP team of
/// kernel_threads() threads: by default the cores this process may run on
/// (OMP_NUM_THREADS when set, else its CPU affinity mask), whatever width
/// torch's own intra-op pool has (Debian's LibTorch starts it at the
/// physical-core count, 1 on a 2-vCPU machine). The team is libgomp's, the
/// pool torch's other ops use, so nothing runs beside it. The BLAS path
/// runs on OpenBLAS's own pool (its default: every core).

#include <torch/types.h>

#include <string>

namespace gpt2 {

/// Where float32 CPU matrix products go.
enum class MatmulBackend {
  torch,   ///< torch::linear / torch::matmul: the system BLAS
  onednn,  ///< oneDNN's sgemm (the default when the library is built with it)
};

/// The process-wide choice: the one set_matmul_backend() forced, else
/// choose_matmul_backend()'s, made at the first call.
MatmulBackend matmul_backend();
/// Forces the process-wide choice. Throws gpt2::Error for onednn in a build
/// without oneDNN.
void set_matmul_backend(MatmulBackend backend);
/// Drops a forced choice: matmul_backend() is the rule's again.
void reset_matmul_backend();

/// The rule, and why, in words (`onednn: OpenBLAS runs generic Prescott
/// kernels on this AVX-512 CPU`).
struct BackendChoice {
  MatmulBackend backend;
  std::string reason;
  /// Whether set_matmul_backend chose it (not the rule).
  bool forced = false;
};
/// The rule for this process: onednn when the build has it [...]
BackendChoice choose_matmul_backend();
/// What matmul_backend() is and why: the rule's reason, or "set by
/// set_matmul_backend".
BackendChoice matmul_backend_choice();

/// Whether `core` (openblas_get_corename()) is one of OpenBLAS's generic
/// x86-64 kernel sets from before AVX ("Prescott", "Core2", ...), which it
/// falls back to on CPUs it does not know.
bool is_generic_openblas_core(const std::string& core);

/// Threads of gpt2's own kernels (oneDNN products, fused attention); see
/// the top of this file.
int kernel_threads();
/// Sets them; 0 restores the default (the cores this process may use).
/// Throws gpt2::Error below 0.
void set_kernel_threads(int threads);
/// The cores this process may run on: OMP_NUM_THREADS when set to a
/// positive number, else the CPUs in its affinity mask (`taskset -c 0`
/// gives 1), at least 1.
int usable_cores();
/// Whether this build can use oneDNN.
bool onednn_available();
/// "torch" or "onednn".
const char* to_string(MatmulBackend backend);

/// y = x W^T + b with autograd, as torch::linear: x (*, in), W (out, in),
/// b (out) or undefined -> y (*, out).
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias);

}  // namespace gpt2
