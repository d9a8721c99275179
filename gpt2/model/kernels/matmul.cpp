#include "gpt2/model/kernels/matmul.h"

#include <torch/autograd.h>
#include <torch/nn/functional/linear.h>

#include <atomic>
#include <string>

#include "gpt2/error.h"
#include "gpt2/model/kernels/sgemm.h"

#ifdef GPT2_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace gpt2 {
namespace {

#ifdef GPT2_WITH_ONEDNN
std::atomic<MatmulBackend> backend{MatmulBackend::onednn};
#else
std::atomic<MatmulBackend> backend{MatmulBackend::torch};
#endif

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

#ifdef GPT2_WITH_ONEDNN
using detail::Matrix;
using detail::sgemm;

// A 2-D float tensor whose rows are contiguous, as sgemm reads it.
Tensor rows(const Tensor& t) {
  const bool fits = t.stride(1) == 1 && (t.size(0) == 1 || t.stride(0) >= t.size(1));
  return fits ? t : t.contiguous();
}
Matrix matrix(const Tensor& t) {
  return {t.data_ptr<float>(), t.size(0) == 1 ? t.size(1) : t.stride(0)};
}

// x (M, K), W (N, K) -> x W^T + b (M, N).
Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t M = x.size(0), N = w.size(0), K = x.size(1);
  Tensor y = torch::empty({M, N}, x.options());
  if (b.defined()) y.copy_(b);  // rows of b, added to by the product (never b itself: M may be 1)
  sgemm(false, true, M, N, K, 1.0f, matrix(x), matrix(w), b.defined() ? 1.0f : 0.0f,
        y.data_ptr<float>(), N);
  return y;
}

// Autograd's apply() takes defined tensors only, so the bias-free form is an
// overload of forward() with one input fewer.
struct LinearFunction : torch::autograd::Function<LinearFunction> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w) {
    return forward(ctx, x, w, Tensor());
  }
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["bias"] = b.defined();
    return linear_forward(x, w, b);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor& x = saved[0];  // (M, K)
    const Tensor& w = saved[1];  // (N, K)
    const Tensor g = grads[0].contiguous();  // (M, N)
    const int64_t M = x.size(0), N = w.size(0), K = x.size(1);
    tensor_list out(ctx->saved_data["bias"].toBool() ? 3 : 2);
    if (ctx->needs_input_grad(0)) {  // g W: (M, N) (N, K)
      out[0] = torch::empty({M, K}, g.options());
      sgemm(false, false, M, K, N, 1.0f, matrix(g), matrix(w), 0.0f, out[0].data_ptr<float>(), K);
    }
    if (ctx->needs_input_grad(1)) {  // g^T x: (N, M) (M, K)
      out[1] = torch::empty({N, K}, g.options());
      sgemm(true, false, N, K, M, 1.0f, matrix(g), matrix(x), 0.0f, out[1].data_ptr<float>(), K);
    }
    if (out.size() == 3 && ctx->needs_input_grad(2)) out[2] = g.sum(0);
    return out;
  }
};

bool onednn_can_take(const Tensor& x, const Tensor& w, const Tensor& b) {
  using detail::onednn_takes;
  return x.dim() >= 1 && w.dim() == 2 && onednn_takes(x) && onednn_takes(w) &&
         (!b.defined() || (onednn_takes(b) && b.dim() == 1)) && x.size(-1) == w.size(1) &&
         (!b.defined() || b.size(0) == w.size(0));
}
#endif

}  // namespace

#ifdef GPT2_WITH_ONEDNN
void detail::sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                   Matrix a, Matrix b, float beta, float* c, int64_t ldc) {
  const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K,
                                          alpha, a.data, a.ld, b.data, b.ld, beta, c, ldc);
  TORCH_CHECK(status == dnnl_success, "oneDNN sgemm failed with status ", int(status), " for M ",
              M, " N ", N, " K ", K);
}
#else
void detail::sgemm(bool, bool, int64_t, int64_t, int64_t, float, Matrix, Matrix, float, float*,
                   int64_t) {
  throw Error("oneDNN sgemm called in a build without oneDNN");  // onednn_takes() is false there
}
#endif

bool detail::onednn_takes(const at::Tensor& t) {
  return backend.load(std::memory_order_relaxed) == MatmulBackend::onednn && t.numel() > 0 &&
         t.device().is_cpu() && t.scalar_type() == torch::kFloat && t.layout() == torch::kStrided;
}

MatmulBackend matmul_backend() { return backend.load(); }

bool onednn_available() {
#ifdef GPT2_WITH_ONEDNN
  return true;
#else
  return false;
#endif
}

void set_matmul_backend(MatmulBackend choice) {
  if (choice == MatmulBackend::onednn && !onednn_available()) {
    throw Error("matmul backend onednn: this build of gpt2 has no oneDNN (GPT2_WITH_ONEDNN off)");
  }
  backend.store(choice);
}

const char* to_string(MatmulBackend choice) {
  return choice == MatmulBackend::onednn ? "onednn" : "torch";
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
#ifdef GPT2_WITH_ONEDNN
  if (onednn_can_take(x, weight, bias)) {
    auto sizes = x.sizes().vec();
    sizes.back() = weight.size(0);
    const Tensor x2 = rows(x.reshape({-1, x.size(-1)}));           // (M, in)
    const Tensor w = rows(weight);                                 // (out, in)
    const Tensor y = bias.defined() ? LinearFunction::apply(x2, w, bias)
                                    : LinearFunction::apply(x2, w);  // (M, out)
    return y.view(sizes);                                            // (*, out)
  }
#endif
  return torch::nn::functional::linear(x, weight, bias);
}

}  // namespace gpt2
