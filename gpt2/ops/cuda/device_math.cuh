#pragma once
// What the library's kernels share: reading and writing float32, bfloat16
// and float16 as float32, a warp's sum, and a launch for each DType.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gpt2/ops/cuda/kernels.h"

namespace gpt2::ops::cuda {

constexpr int kWarp = 32;

__device__ inline float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float to_float(__half v) { return __half2float(v); }

template <class T>
__device__ T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) { return v; }
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <>
__device__ inline __half from_float<__half>(float v) { return __float2half(v); }

// Calls f with a null pointer of the C++ type of `type` (host side).
template <class F>
void with_type(DType type, F&& f) {
  switch (type) {
    case DType::kFloat: f(static_cast<float*>(nullptr)); break;
    case DType::kBFloat16: f(static_cast<__nv_bfloat16*>(nullptr)); break;
    case DType::kHalf: f(static_cast<__half*>(nullptr)); break;
  }
}

}  // namespace gpt2::ops::cuda
