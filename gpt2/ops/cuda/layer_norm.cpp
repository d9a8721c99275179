#include "gpt2/ops/cuda/layer_norm.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/autograd.h>

#include <limits>

#include "gpt2/ops/cuda/dtype.h"
#include "gpt2/ops/cuda/kernels.h"

namespace gpt2::ops::cuda {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

const float* floats(const Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

class LayerNormFunction : public torch::autograd::Function<LayerNormFunction> {
 public:
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& weight,
                        const Tensor& bias, double eps, int64_t out_dtype) {
    const c10::cuda::CUDAGuard on_device(x.device());
    const Tensor xc = x.contiguous();
    const int64_t C = x.size(-1), rows = C == 0 ? 0 : x.numel() / C;
    const auto out_type = static_cast<torch::ScalarType>(out_dtype);
    Tensor out = torch::empty(x.sizes(), x.options().dtype(out_type));
    Tensor mean = torch::empty({rows}, x.options().dtype(torch::kFloat));
    Tensor rstd = torch::empty({rows}, x.options().dtype(torch::kFloat));
    C10_CUDA_CHECK(layernorm_forward(
        out.data_ptr(), dtype_of(out_type, "LayerNorm"), mean.data_ptr<float>(),
        rstd.data_ptr<float>(), xc.data_ptr(), dtype_of(x.scalar_type(), "LayerNorm"),
        weight.data_ptr<float>(), floats(bias), rows, static_cast<int>(C),
        static_cast<float>(eps), c10::cuda::getCurrentCUDAStream(x.device().index())));
    ctx->save_for_backward({xc, weight, mean, rstd});
    ctx->saved_data["bias"] = bias.defined();
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &weight = saved[1], &mean = saved[2], &rstd = saved[3];
    const bool has_bias = ctx->saved_data["bias"].toBool();
    if (!grads[0].defined()) return {Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
    const c10::cuda::CUDAGuard on_device(x.device());
    const Tensor dout = grads[0].contiguous();
    const int64_t C = x.size(-1), rows = C == 0 ? 0 : x.numel() / C;
    Tensor dx = torch::empty_like(x);
    Tensor dweight = torch::empty_like(weight);
    Tensor dbias = has_bias ? torch::empty_like(weight) : Tensor();
    Tensor partial = torch::empty({2, layernorm_backward_chunks(rows), C},
                                  x.options().dtype(torch::kFloat));
    C10_CUDA_CHECK(layernorm_backward(
        dx.data_ptr(), dout.data_ptr(), dtype_of(dout.scalar_type(), "LayerNorm"),
        x.data_ptr(), dtype_of(x.scalar_type(), "LayerNorm"), weight.data_ptr<float>(),
        mean.data_ptr<float>(), rstd.data_ptr<float>(), dweight.data_ptr<float>(),
        has_bias ? dbias.data_ptr<float>() : nullptr, partial.data_ptr<float>(), rows,
        static_cast<int>(C), c10::cuda::getCurrentCUDAStream(x.device().index())));
    return {dx, dweight, dbias, Tensor(), Tensor()};
  }
};

}  // namespace

bool layer_norm_applies(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (!x.defined() || !x.is_cuda() || x.dim() < 1 || !kernel_type(x.scalar_type())) return false;
  const int64_t C = x.size(-1);
  if (C < 1 || C > std::numeric_limits<int>::max()) return false;
  const auto fits = [&](const Tensor& p) {
    return p.dim() == 1 && p.size(0) == C && p.scalar_type() == torch::kFloat &&
           p.device() == x.device() && p.is_contiguous();
  };
  return weight.defined() && fits(weight) && (!bias.defined() || fits(bias));
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                  torch::ScalarType out_dtype) {
  TORCH_CHECK(layer_norm_applies(x, weight, bias), "the CUDA LayerNorm does not take these inputs");
  TORCH_CHECK(kernel_type(out_dtype), "the CUDA LayerNorm has no kernel writing ", out_dtype);
  return LayerNormFunction::apply(x, weight, bias, eps, static_cast<int64_t>(out_dtype));
}

}  // namespace gpt2::ops::cuda
