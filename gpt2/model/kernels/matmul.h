#pragma once
/// The model's float32 matrix products on the CPU, through oneDNN's sgemm.
///
/// LibTorch sends torch::mm and torch::linear to the system BLAS. On this
/// project's machine (Debian 12, OpenBLAS 0.3.21) that BLAS does not know the
/// CPU and falls back to its SSE3 "Prescott" kernels: about 30 GFLOP/s on two
/// cores, where the same LibTorch's own oneDNN (libdnnl, a dependency of
/// Debian's libtorch) reaches 200 and more. So Linear goes through oneDNN when
/// the tensors are float32 on the CPU, and through torch::linear otherwise.
/// The results agree with torch's to float rounding; only the summation order
/// differs. Export is unaffected: the TorchScript program is written, not
/// traced, and uses torch's own ops.
///
/// The products run on torch's intra-op threads (oneDNN and torch share one
/// OpenMP pool): at::set_num_threads(n) sets them. The gpt2 command uses all
/// cores; an app that links the library chooses its own.

#include <torch/types.h>

namespace gpt2 {

/// Where float32 CPU matrix products go.
enum class MatmulBackend {
  torch,   ///< torch::linear / torch::matmul: the system BLAS
  onednn,  ///< oneDNN's sgemm (the default when the library is built with it)
};

/// The process-wide choice; default MatmulBackend::onednn when built with it.
MatmulBackend matmul_backend();
/// Sets the process-wide choice. Throws gpt2::Error for onednn in a build
/// without oneDNN.
void set_matmul_backend(MatmulBackend backend);
/// Whether this build can use oneDNN.
bool onednn_available();
/// "torch" or "onednn".
const char* to_string(MatmulBackend backend);

/// y = x W^T + b with autograd, as torch::linear: x (*, in), W (out, in),
/// b (out) or undefined -> y (*, out).
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias);

}  // namespace gpt2
