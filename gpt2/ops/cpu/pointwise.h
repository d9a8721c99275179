#pragma once
/// LayerNorm and GELU as torch computes them, with their backward on gpt2's
/// kernel threads.
///
/// torch's own autograd nodes run their backward on torch's intra-op pool,
/// which Debian's LibTorch starts at 1 thread on a 2-vCPU machine, so in an
/// app that sets nothing the backward of every LayerNorm and GELU ran on one
/// core while the products beside them ran on all. These functions call the
/// same ATen kernels forward and backward (at::native_layer_norm and its
/// backward, at::gelu and at::gelu_backward) inside the kernels' thread
/// scope: the same numbers, on kernel_threads() threads. Where gpt2's
/// kernels are not chosen (matmul_backend() torch) or the input is not a
/// float32 CPU tensor they are torch::layer_norm and torch::gelu, which also
/// give a second derivative; these do not.

#include <torch/types.h>

#include <string>

namespace gpt2::cpu {

/// torch::layer_norm(x, {weight.size(0)}, weight, bias, eps) over the last
/// dimension; bias may be undefined.
torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& weight,
                         const torch::Tensor& bias, double eps);

/// torch::gelu(x, approximate) with approximate "none" or "tanh".
torch::Tensor gelu(const torch::Tensor& x, const std::string& approximate);

}  // namespace gpt2::cpu
