// The head's softmax and cross-entropy over its logits, in place, in the
// manner of llm.c's fused classifier: a block per row reads the row once
// for its maximum and the sum of exponentials (combined as it goes, in
// float32 whatever the type), then once more to write the gradient,
// (softmax - onehot) * factor, over the logits it read. torch's ops make a
// float32 log_softmax of every chunk, exponentiate it, scatter the one-hot
// and multiply: five passes over float32 where this makes three over the
// half logits.

#include <cmath>
#include <type_traits>

#include "gpt2/ops/cuda/device_math.cuh"
#include "gpt2/ops/cuda/kernels.h"

namespace gpt2::ops::cuda {
namespace {

constexpr int kThreads = 512;  // a block per row; GPT-2's 50257 is ~98 values a thread

// The largest value seen and the sum of exp(v - max) over the values seen.
struct MaxSum {
  float max = -INFINITY;
  float sum = 0.f;
};

__device__ MaxSum add(MaxSum a, float v) {
  if (v > a.max) {  // a.max = -inf first: exp(-inf) = 0
    a.sum = a.sum * expf(a.max - v) + 1.f;
    a.max = v;
  } else if (v != -INFINITY) {  // NaN falls here and makes the sum NaN, as torch's
    a.sum += expf(v - a.max);
  }
  return a;
}

__device__ MaxSum merge(MaxSum a, MaxSum b) {
  if (b.max > a.max) {
    const MaxSum t = a;
    a = b;
    b = t;
  }
  if (b.max == -INFINITY) return a;  // b saw nothing but -inf
  a.sum += b.sum * expf(b.max - a.max);
  return a;
}

__device__ MaxSum warp_merge(MaxSum a) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    MaxSum b;
    b.max = __shfl_xor_sync(0xffffffffu, a.max, offset);
    b.sum = __shfl_xor_sync(0xffffffffu, a.sum, offset);
    a = merge(a, b);
  }
  return a;
}

// Row blockIdx.x of logits (rows, ld): losses[row] = logsumexp(x[:V]) -
// x[target] (0 for target -1); with factor, x[:V] becomes (softmax - onehot)
// * factor[row] and x[V:ld] zero.
template <class T>
__global__ void classifier_kernel(T* __restrict__ logits, float* __restrict__ losses,
                                  const int64_t* __restrict__ targets,
                                  const float* __restrict__ factor, int64_t V, int64_t ld) {
  __shared__ float maxes[kThreads / kWarp], sums[kThreads / kWarp];
  __shared__ float row_max, row_sum, target_value;
  const int64_t row = blockIdx.x;
  T* x = logits + row * ld;
  const int64_t target = targets[row];
  const bool scored = target >= 0 && target < V;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int warp = static_cast<int>(threadIdx.x / kWarp);
  if (threadIdx.x == 0) target_value = scored ? to_float(x[target]) : 0.f;  // before any write
  MaxSum acc;
  for (int64_t i = threadIdx.x; i < V; i += kThreads) acc = add(acc, to_float(x[i]));
  acc = warp_merge(acc);
  if (lane == 0) {
    maxes[warp] = acc.max;
    sums[warp] = acc.sum;
  }
  __syncthreads();
  if (warp == 0) {
    MaxSum part;
    if (lane < kThreads / kWarp) {
      part.max = maxes[lane];
      part.sum = sums[lane];
    }
    part = warp_merge(part);
    if (lane == 0) {
      row_max = part.max;
      row_sum = part.sum;
    }
  }
  __syncthreads();
  const float m = row_max, s = row_sum;
  if (threadIdx.x == 0) losses[row] = scored ? m + logf(s) - target_value : 0.f;
  if (factor == nullptr) return;
  const float f = factor[row], inv = 1.f / s;
  for (int64_t i = threadIdx.x; i < ld; i += kThreads) {
    const float g = i < V ? (expf(to_float(x[i]) - m) * inv - (i == target ? 1.f : 0.f)) * f : 0.f;
    x[i] = from_float<T>(g);
  }
}

}  // namespace

cudaError_t classifier(void* logits, DType type, float* losses, const int64_t* targets,
                       const float* factor, int64_t rows, int64_t V, int64_t ld,
                       cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  with_type(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    classifier_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<T*>(logits), losses, targets, factor, V, ld);
  });
  return cudaGetLastError();
}

}  // namespace gpt2::ops::cuda
