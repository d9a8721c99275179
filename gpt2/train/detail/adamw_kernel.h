#pragma once
/// The element loop of one AdamW update, kept apart from LibTorch so that it
/// compiles with the flags that let the compiler vectorize it (see
/// gpt2/CMakeLists.txt). Internal to the train layer.

#include <cstdint>

namespace gpt2::detail {

/// Per-step constants of one parameter group, in float as torch's kernels
/// use them.
struct AdamWCoefficients {
  float decay = 1;          ///< 1 - lr * weight_decay (1: no decay)
  float beta1 = 0.9f;       ///< m <- beta1 m + (1 - beta1) g
  float one_minus_beta1 = 0.1f;
  float beta2 = 0.999f;     ///< v <- beta2 v + (1 - beta2) g^2
  float one_minus_beta2 = 0.001f;
  float sqrt_bias_correction2 = 1;  ///< sqrt(1 - beta2^step)
  float eps = 1e-8f;
  float neg_step_size = 0;  ///< -lr / (1 - beta1^step)
  float grad_scale = 1;     ///< g <- g grad_scale first: a clip folded in (1: none)
};

/// Updates n elements in place, in the order of torch::optim::AdamW's ops:
///   g *= grad_scale (the gradient as read; g itself is not written);
///   p *= decay; m = m beta1 + (1 - beta1) g; v = v beta2 + (1 - beta2) g g;
///   p += neg_step_size m / (sqrt(v) / sqrt_bias_correction2 + eps).
void adamw_update(float* p, const float* g, float* m, float* v, int64_t n,
                  const AdamWCoefficients& c);

}  // namespace gpt2::detail
