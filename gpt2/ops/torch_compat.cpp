#include "gpt2/ops/torch_compat.h"

#include <torch/types.h>

namespace gpt2::compat {

namespace {
constexpr int kVersion = TORCH_VERSION_MAJOR * 100 + TORCH_VERSION_MINOR;
}  // namespace

bool has_sdpa() { return kVersion >= 200; }

bool has_fused_adamw() { return kVersion >= 204; }

at::Tensor causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
#else
  (void)k;
  (void)v;
  TORCH_CHECK(false, "scaled_dot_product_attention needs LibTorch 2.0 or later; this is ",
              TORCH_VERSION, " (q ", q.sizes(), ")");
  return {};
#endif
}

void fused_adamw(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
                 at::TensorList exp_avg_sqs, at::TensorList steps, double lr, double beta1,
                 double beta2, double weight_decay, double eps) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  // As torch.optim.AdamW(fused=True): the steps count up first, so the
  // kernel's bias corrections see this step's number.
  for (const at::Tensor& step : steps) step.add_(1);
  at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, lr, beta1,
                    beta2, weight_decay, eps, /*amsgrad=*/false, /*maximize=*/false);
#else
  (void)grads, (void)exp_avgs, (void)exp_avg_sqs, (void)steps, (void)lr, (void)beta1, (void)beta2,
      (void)weight_decay, (void)eps;
  TORCH_CHECK(false, "torch's fused CPU AdamW needs LibTorch 2.4 or later; this is ", TORCH_VERSION,
              " (", params.size(), " tensors)");
#endif
}

}  // namespace gpt2::compat
