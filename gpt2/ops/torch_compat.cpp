#include "gpt2/ops/torch_compat.h"

#include <ATen/autocast_mode.h>
#include <torch/types.h>

#include <optional>

namespace gpt2::compat {

namespace {
constexpr int kVersion = TORCH_VERSION_MAJOR * 100 + TORCH_VERSION_MINOR;
}  // namespace

bool has_sdpa() { return kVersion >= 200; }

bool has_fused_adamw() { return kVersion >= 204; }

at::Tensor sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                const at::Tensor& allowed, double dropout_p, bool is_causal) {
#if TORCH_VERSION_MAJOR >= 2
  const c10::optional<at::Tensor> mask =
      allowed.defined() ? c10::optional<at::Tensor>(allowed) : c10::nullopt;
  return at::scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal);
#else
  (void)k, (void)v, (void)allowed, (void)dropout_p, (void)is_causal;
  TORCH_CHECK(false, "scaled_dot_product_attention needs LibTorch 2.0 or later; this is ",
              TORCH_VERSION, " (q ", q.sizes(), ")");
  return {};
#endif
}

at::Tensor causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  return sdpa(q, k, v, {}, 0.0, /*is_causal=*/true);
}

std::string sdpa_choice(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                        bool is_causal) {
#if TORCH_VERSION_MAJOR >= 2
  // The numbers of at::SDPBackend (2.0: math 0, flash 1, efficient 2; 2.2 adds cuDNN 3).
  switch (at::_fused_sdp_choice(q, k, v, {}, 0.0, is_causal)) {
    case 0: return "math";
    case 1: return "flash";
    case 2: return "memory-efficient";
    case 3: return "cuDNN";
    case 4: return "a backend's own";
    default: return "none fits";
  }
#else
  (void)q, (void)k, (void)v, (void)is_causal;
  return "none: LibTorch " TORCH_VERSION " has no scaled_dot_product_attention";
#endif
}

void fused_adamw(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
                 at::TensorList exp_avg_sqs, at::TensorList steps, double lr, double beta1,
                 double beta2, double weight_decay, double eps, const at::Tensor& grad_scale) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  const std::optional<at::Tensor> scale =
      grad_scale.defined() ? std::optional<at::Tensor>(grad_scale) : std::nullopt;
  at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, lr, beta1,
                    beta2, weight_decay, eps, /*amsgrad=*/false, /*maximize=*/false, scale);
#else
  (void)grads, (void)exp_avgs, (void)exp_avg_sqs, (void)steps, (void)lr, (void)beta1, (void)beta2,
      (void)weight_decay, (void)eps, (void)grad_scale;
  TORCH_CHECK(false, "torch's fused CPU AdamW needs LibTorch 2.4 or later; this is ", TORCH_VERSION,
              " (", params.size(), " tensors)");
#endif
}

AutocastState autocast_state(c10::DeviceType type) {
  TORCH_CHECK(type == c10::kCPU || type == c10::kCUDA, "autocast: no state for ", type);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return {at::autocast::is_autocast_enabled(type), at::autocast::get_autocast_dtype(type)};
#else
  if (type == c10::kCPU) return {at::autocast::is_cpu_enabled(), at::autocast::get_autocast_cpu_dtype()};
  return {at::autocast::is_enabled(), at::autocast::get_autocast_gpu_dtype()};
#endif
}

void set_autocast_state(c10::DeviceType type, AutocastState state) {
  TORCH_CHECK(type == c10::kCPU || type == c10::kCUDA, "autocast: no state for ", type);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  at::autocast::set_autocast_enabled(type, state.enabled);
  at::autocast::set_autocast_dtype(type, state.dtype);
#else
  if (type == c10::kCPU) {
    at::autocast::set_cpu_enabled(state.enabled);
    at::autocast::set_autocast_cpu_dtype(state.dtype);
  } else {
    at::autocast::set_enabled(state.enabled);
    at::autocast::set_autocast_gpu_dtype(state.dtype);
  }
#endif
}

}  // namespace gpt2::compat
