#pragma once
// The library's own CUDA kernels (gpt2/ops/cuda/*.cu), as nvcc compiles
// them: pointers, sizes and a stream, no LibTorch. One ATen wrapper per op
// (layer_norm.h) is all the ops seam sees. Internal to gpt2/ops.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace gpt2::ops::cuda {

/// The element types the kernels read and write.
enum class DType { kFloat, kBFloat16, kHalf };

/// LayerNorm over rows of C values: out = (x - mean) * rstd * weight + bias
/// (bias may be null), in float32 whatever x's and out's types; mean and
/// rstd (rows,) float32 are kept for the backward.
cudaError_t layernorm_forward(void* out, DType out_type, float* mean, float* rstd, const void* x,
                              DType x_type, const float* weight, const float* bias, int64_t rows,
                              int C, float eps, cudaStream_t stream);

/// Rows of partial sums the backward's parameter gradients use: `partial`
/// holds 2 x layernorm_backward_chunks(rows) x C floats.
int64_t layernorm_backward_chunks(int64_t rows);

/// The backward of layernorm_forward: dx (x's type), and dweight, dbias
/// (C,) float32 (dbias may be null), from dout (dout_type) and the saved
/// mean and rstd. The parameter gradients are summed in a fixed order, so a
/// run repeats bit for bit.
cudaError_t layernorm_backward(void* dx, const void* dout, DType dout_type, const void* x,
                               DType x_type, const float* weight, const float* mean,
                               const float* rstd, float* dweight, float* dbias, float* partial,
                               int64_t rows, int C, cudaStream_t stream);

/// The head's loss and its gradient over `rows` rows of logits (rows, ld)
/// of `type`, in place: losses[r] = logsumexp(logits[r, :V]) -
/// logits[r, targets[r]] (0 where the target is -1), the softmax in
/// float32. With `factor` (rows,) not null, logits[r, :V] is overwritten
/// by (softmax - onehot(targets[r])) * factor[r] and logits[r, V:ld] by 0.
cudaError_t classifier(void* logits, DType type, float* losses, const int64_t* targets,
                       const float* factor, int64_t rows, int64_t V, int64_t ld,
                       cudaStream_t stream);

}  // namespace gpt2::ops::cuda
