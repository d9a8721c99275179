#pragma once
// The float32 CPU product y = x W^T + b on oneDNN's sgemm, with autograd
// (internal to gpt2/ops; ops::linear decides when it runs). Its forward and
// backward are three sgemm calls on the kernel threads whose outputs come
// from the buffer pool; the result equals torch::linear's to float rounding
// (only the summation order differs). Where oneDNN runs AVX-512, x W^T of 16
// rows or more goes to its matmul primitive (onednn_matmul.cpp).
// docs/cpu-kernels.md says why the library carries its own product path.

#include <torch/types.h>

#include "gpt2/ops/settings.h"

namespace gpt2::cpu {

/// Whether sgemm_linear takes these: the kOneDnn backend, float32 strided
/// CPU tensors of matching widths, x (*, in), W (out, in), b (out).
bool sgemm_linear_applies(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias);

/// y = x W^T + b with autograd: x (*, in), W (out, in), b (out) or
/// undefined -> y (*, out). Only where sgemm_linear_applies.
torch::Tensor sgemm_linear(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias);

}  // namespace gpt2::cpu
