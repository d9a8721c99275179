#pragma once
// The ATen side of layernorm.cu: an autograd function the ops seam calls
// (ops::layer_norm on a CUDA device under autocast). Internal to gpt2/ops;
// built where LibTorch has CUDA and CMake finds nvcc (GPT2_CUDA_KERNELS).

#include <torch/types.h>

namespace gpt2::ops::cuda {

/// Whether layer_norm() takes these: x (*, C) float32, bfloat16 or float16
/// on a CUDA device, weight (C) and bias (C, or undefined) float32 on it.
bool layer_norm_applies(const torch::Tensor& x, const torch::Tensor& weight,
                        const torch::Tensor& bias);

/// torch::layer_norm over the last dimension, statistics in float32, the
/// output in `out_dtype` (the autocast dtype, which the next product
/// reads). Differentiable in x, weight and bias; the gradient it is given
/// may be of any of the three types.
torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& weight,
                         const torch::Tensor& bias, double eps, torch::ScalarType out_dtype);

}  // namespace gpt2::ops::cuda
