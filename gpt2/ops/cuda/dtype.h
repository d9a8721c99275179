#pragma once
// The kernels' element types (kernels.h's DType) for the ATen wrappers.
// Internal to gpt2/ops/cuda.

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include "gpt2/ops/cuda/kernels.h"

namespace gpt2::ops::cuda {

/// Whether the kernels read and write `t`: float32, bfloat16 or float16.
inline bool kernel_type(c10::ScalarType t) {
  return t == c10::kFloat || t == c10::kBFloat16 || t == c10::kHalf;
}

/// The DType of `t`; c10::Error naming `op` for a type no kernel takes.
inline DType dtype_of(c10::ScalarType t, const char* op) {
  TORCH_CHECK(kernel_type(t), "the CUDA ", op, " has no kernel for ", t);
  return t == c10::kFloat ? DType::kFloat : t == c10::kBFloat16 ? DType::kBFloat16 : DType::kHalf;
}

}  // namespace gpt2::ops::cuda
