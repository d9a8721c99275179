#include "gpt2/ops/cpu/pointwise.h"

#include <torch/autograd.h>

#include <array>
#include <initializer_list>
#include <string>

#include "gpt2/ops/cpu/sgemm.h"

namespace gpt2::cpu {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// Two forwards, with and without bias: LibTorch 1.13's custom functions
// refuse an undefined tensor argument ("tensor does not have a device").
struct LayerNormFunction : torch::autograd::Function<LayerNormFunction> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& weight, double eps) {
    return forward(ctx, x, weight, Tensor(), eps);
  }
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& weight,
                        const Tensor& bias, double eps) {
    KernelTeam team;
    auto [y, mean, rstd] = at::native_layer_norm(x, {weight.size(0)}, weight, bias, eps);
    ctx->save_for_backward({x, weight, bias, mean, rstd});
    ctx->saved_data["bias"] = bias.defined();
    return y;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    KernelTeam team;
    const auto s = ctx->get_saved_variables();
    const bool has_bias = ctx->saved_data["bias"].toBool();
    const std::array<bool, 3> mask = {ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                                      has_bias && ctx->needs_input_grad(2)};
    auto [dx, dw, db] = at::native_layer_norm_backward(grads[0].contiguous(), s[0], {s[1].size(0)},
                                                       s[3], s[4], s[1], s[2], mask);
    if (has_bias) return {dx, dw, db, Tensor()};
    return {dx, dw, Tensor()};
  }
};

struct GeluFunction : torch::autograd::Function<GeluFunction> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const std::string& approximate) {
    KernelTeam team;
    ctx->save_for_backward({x});
    ctx->saved_data["approximate"] = approximate;
    return at::gelu(x, approximate);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    KernelTeam team;
    const Tensor x = ctx->get_saved_variables()[0];
    return {at::gelu_backward(grads[0], x, ctx->saved_data["approximate"].toStringRef()),
            Tensor()};
  }
};

// Whether the backward may be asked for: without it, torch's own op does the
// same forward with no node to record.
bool records(std::initializer_list<Tensor> inputs) {
  if (!torch::GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  if (records({x, weight, bias}) && detail::onednn_takes(x) && x.is_contiguous() &&
      detail::onednn_takes(weight) && (!bias.defined() || detail::onednn_takes(bias))) {
    return bias.defined() ? LayerNormFunction::apply(x, weight, bias, eps)
                          : LayerNormFunction::apply(x, weight, eps);
  }
  return torch::layer_norm(x, {weight.size(0)}, weight, bias, eps);
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (records({x}) && detail::onednn_takes(x)) return GeluFunction::apply(x, approximate);
  return torch::gelu(x, approximate);
}

}  // namespace gpt2::cpu
