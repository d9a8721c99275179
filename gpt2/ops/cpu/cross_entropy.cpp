#include "gpt2/ops/cpu/cross_entropy.h"

#include <fmt/format.h>
#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>

#include "gpt2/error.h"
#include "gpt2/ops/memory/buffer_pool.h"
#include "gpt2/ops/cpu/sgemm.h"

namespace gpt2::cpu {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct CrossEntropyFunction : torch::autograd::Function<CrossEntropyFunction> {
  // logits (N, V) contiguous, targets (N).
  static Tensor forward(AutogradContext* ctx, const Tensor& logits, const Tensor& targets) {
    KernelTeam team;  // torch's ops here on kernel_threads()
    const Tensor max = std::get<0>(logits.max(1, /*keepdim=*/true));    // (N, 1)
    Tensor e = detail::empty_pooled(logits.sizes());                    // exp(x - max)
    at::sub_out(e, logits, max).exp_();
    const Tensor sum = e.sum(1);                                        // (N)
    const Tensor valid = targets.ne(-1);
    const Tensor picked = logits.gather(1, targets.clamp_min(0).unsqueeze(1)).squeeze(1);
    // -log softmax(x)[t] = log sum exp(x - max) - (x[t] - max), torch's order
    const Tensor per_row =
        (sum.log() - (picked - max.squeeze(1))).masked_fill_(valid.logical_not(), 0);
    const Tensor count = valid.sum().to(torch::kFloat);
    ctx->save_for_backward({e, sum, targets, count});
    return per_row.sum() / count;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    KernelTeam team;
    const auto saved = ctx->get_saved_variables();
    const Tensor &e = saved[0], &sum = saved[1], &targets = saved[2], &count = saved[3];
    const Tensor valid = targets.ne(-1).to(torch::kFloat);
    const Tensor g = grads[0] / count;                                  // d loss / d row loss
    // d/dx = g (softmax(x) - onehot(t)) for a counted row, 0 for an ignored one.
    Tensor dx = detail::empty_pooled(e.sizes());
    at::mul_out(dx, e, (g * valid / sum).unsqueeze(1));
    dx.scatter_add_(1, targets.clamp_min(0).unsqueeze(1), (-g * valid).unsqueeze(1));
    return {dx, Tensor()};
  }
};

}  // namespace

bool cross_entropy_applies(const Tensor& logits, const Tensor& targets) {
  return detail::onednn_takes(logits) && logits.dim() == 2 && targets.dim() == 1 &&
         targets.scalar_type() == torch::kLong && targets.device().is_cpu() &&
         targets.size(0) == logits.size(0);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  if (cross_entropy_applies(logits, targets)) {
    // torch's refuses these too; clamped below, they would count as class 0.
    const int64_t V = logits.size(1);
    const Tensor bad = (targets < -1) | (targets >= V);
    if (bad.any().item<bool>()) {
      const int64_t i = bad.nonzero()[0][0].item<int64_t>();
      throw InputError(fmt::format("cross_entropy: target {} at row {} is outside [0, {}) and is "
                                   "not the ignore index -1",
                                   targets[i].item<int64_t>(), i, V));
    }
    return CrossEntropyFunction::apply(logits.contiguous(), targets);
  }
  namespace F = torch::nn::functional;
  return F::cross_entropy(logits, targets, F::CrossEntropyFuncOptions().ignore_index(-1));
}

}  // namespace gpt2::cpu
