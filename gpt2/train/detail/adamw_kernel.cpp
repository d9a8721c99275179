#include "gpt2/train/detail/adamw_kernel.h"

#include <cmath>

namespace gpt2::detail {

void adamw_update(float* __restrict p, const float* __restrict g, float* __restrict m,
                  float* __restrict v, int64_t n, const AdamWCoefficients& c) {
  const AdamWCoefficients k = c;  // locals: the loop must not reload them
  for (int64_t i = 0; i < n; ++i) {
    const float grad = g[i] * k.grad_scale;  // x * 1 is x: no clip, no change
    const float mi = m[i] * k.beta1 + k.one_minus_beta1 * grad;
    const float vi = v[i] * k.beta2 + k.one_minus_beta2 * grad * grad;
    const float denom = std::sqrt(vi) / k.sqrt_bias_correction2 + k.eps;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * k.decay + k.neg_step_size * mi / denom;
  }
}

}  // namespace gpt2::detail
