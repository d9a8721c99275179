// Causal self-attention on oneDNN's sgemm, one (batch, head) pair per task:
// nanoGPT's explicit path (scores, mask, softmax, dropout, times v) with the
// heads read from and written to their places in c_attn's output, so no
// transpose or copy is made. See gpt2/ops/cpu/matmul.h.
#include "gpt2/ops/cpu/fused_attention.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <cmath>
#include <limits>

#include "gpt2/ops/cpu/sgemm.h"
#include "gpt2/ops/cpu/matmul.h"

#ifndef _OPENMP
#error "build this file with -fopenmp: without it at::parallel_for runs on one thread (gpt2/CMakeLists.txt)"
#endif

namespace gpt2::cpu {
namespace {

using detail::Matrix;
using detail::sgemm;
using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// Where head h of batch row b lives: q, k, v in qkv (B, T, 3C), its (T, hs)
// slice of y (B, T, C), its (T, T) scores.
struct Heads {
  int64_t B, T, C, nh, hs;
  int64_t pairs() const { return B * nh; }
  int64_t q(int64_t i) const { return (i / nh) * T * 3 * C + (i % nh) * hs; }  // in qkv
  int64_t y(int64_t i) const { return (i / nh) * T * C + (i % nh) * hs; }      // in y
  int64_t s(int64_t i) const { return i * T * T; }                              // in scores
};

Heads heads_of(const Tensor& qkv, int64_t n_head) {
  const int64_t C = qkv.size(2) / 3;
  return {qkv.size(0), qkv.size(1), C, n_head, C / n_head};
}

template <class F>
void each_pair(const Heads& h, const F& f) {
  at::parallel_for(0, h.pairs(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) f(i);
  });
}

struct AttentionFunction : torch::autograd::Function<AttentionFunction> {
  // qkv (B, T, 3C) contiguous; mask (T, T), true where a query may not look.
  static Tensor forward(AutogradContext* ctx, const Tensor& qkv, int64_t n_head, const Tensor& mask,
                        double dropout) {
    KernelTeam team;  // the products and torch's ops here on kernel_threads()
    const Heads h = heads_of(qkv, n_head);
    const float* base = qkv.data_ptr<float>();
    const int64_t ld = 3 * h.C;
    const float scale = static_cast<float>(1.0 / std::sqrt(double(h.hs)));
    Tensor att = torch::empty({h.B, h.nh, h.T, h.T}, qkv.options());  // (B, nh, T, T)
    float* s = att.data_ptr<float>();
    each_pair(h, [&](int64_t i) {  // q k^T / sqrt(hs)
      const float* q = base + h.q(i);
      sgemm(false, true, h.T, h.T, h.hs, scale, {q, ld}, {q + h.C, ld}, 0.0f, s + h.s(i), h.T);
    });
    if (mask.defined()) att.masked_fill_(mask, -std::numeric_limits<double>::infinity());
    const Tensor p = torch::softmax(att, -1);
    Tensor noise;  // drawn as torch::dropout draws it, so the stream is the same
    if (dropout >= 1) {
      noise = torch::zeros_like(p);
    } else if (dropout > 0) {
      noise = torch::empty_like(p).bernoulli_(1 - dropout).div_(1 - dropout);
    }
    const Tensor pd = noise.defined() ? p * noise : p;
    Tensor y = torch::empty({h.B, h.T, h.C}, qkv.options());         // (B, T, C)
    const float* a = pd.data_ptr<float>();
    float* out = y.data_ptr<float>();
    each_pair(h, [&](int64_t i) {  // att v, written into the head's columns
      sgemm(false, false, h.T, h.hs, h.T, 1.0f, {a + h.s(i), h.T}, {base + h.q(i) + 2 * h.C, ld},
            0.0f, out + h.y(i), h.C);
    });
    ctx->save_for_backward({qkv, p, noise.defined() ? noise : Tensor()});
    ctx->saved_data["n_head"] = n_head;
    return y;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    KernelTeam team;
    const auto saved = ctx->get_saved_variables();
    const Tensor &qkv = saved[0], &p = saved[1], &noise = saved[2];
    const Heads h = heads_of(qkv, ctx->saved_data["n_head"].toInt());
    const Tensor dy = grads[0].contiguous();                          // (B, T, C)
    const Tensor pd = noise.defined() ? p * noise : p;
    const int64_t ld = 3 * h.C;
    const float scale = static_cast<float>(1.0 / std::sqrt(double(h.hs)));
    const float *base = qkv.data_ptr<float>(), *g = dy.data_ptr<float>(), *a = pd.data_ptr<float>();
    Tensor dqkv = torch::empty_like(qkv);                             // (B, T, 3C)
    Tensor dpd = torch::empty_like(p);                                // (B, nh, T, T)
    float *dq = dqkv.data_ptr<float>(), *ds = dpd.data_ptr<float>();
    each_pair(h, [&](int64_t i) {
      const float* v = base + h.q(i) + 2 * h.C;
      // d(att) = dy v^T; dv = att^T dy
      sgemm(false, true, h.T, h.T, h.hs, 1.0f, {g + h.y(i), h.C}, {v, ld}, 0.0f, ds + h.s(i), h.T);
      sgemm(true, false, h.T, h.hs, h.T, 1.0f, {a + h.s(i), h.T}, {g + h.y(i), h.C}, 0.0f,
            dq + h.q(i) + 2 * h.C, ld);
    });
    const Tensor dp = noise.defined() ? dpd.mul_(noise) : dpd;
    // Masked scores have p = 0, so their gradient is 0 as well.
    const Tensor dscore = torch::_softmax_backward_data(dp, p, -1, torch::kFloat);
    const float* d = dscore.data_ptr<float>();
    each_pair(h, [&](int64_t i) {
      const float* q = base + h.q(i);
      // dq = dS k / sqrt(hs); dk = dS^T q / sqrt(hs)
      sgemm(false, false, h.T, h.hs, h.T, scale, {d + h.s(i), h.T}, {q + h.C, ld}, 0.0f,
            dq + h.q(i), ld);
      sgemm(true, false, h.T, h.hs, h.T, scale, {d + h.s(i), h.T}, {q, ld}, 0.0f,
            dq + h.q(i) + h.C, ld);
    });
    return {dqkv, Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace

bool fused_attention_applies(const torch::Tensor& qkv) {
  return detail::onednn_takes(qkv) && qkv.dim() == 3 && qkv.size(2) % 3 == 0;
}

torch::Tensor causal_attention(const torch::Tensor& qkv, int64_t n_head, const torch::Tensor& mask,
                               double dropout) {
  TORCH_CHECK(fused_attention_applies(qkv), "causal_attention takes float32 CPU (B, T, 3C) with "
              "the onednn backend; got ", qkv.sizes(), " ", qkv.scalar_type());
  TORCH_CHECK(n_head > 0 && (qkv.size(2) / 3) % n_head == 0, "n_head ", n_head,
              " does not divide C ", qkv.size(2) / 3);
  const int64_t T = qkv.size(1);
  // autograd's apply() takes defined tensors only; T = 1 has nothing to mask.
  const torch::Tensor future =
      mask.defined() ? mask : torch::zeros({T, T}, torch::TensorOptions(torch::kBool));
  return AttentionFunction::apply(qkv.contiguous(), n_head, future, dropout);
}

}  // namespace gpt2::cpu
