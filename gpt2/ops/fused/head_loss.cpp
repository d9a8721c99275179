#include "gpt2/ops/fused/head_loss.h"

#include <fmt/format.h>
#include <torch/autograd.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "gpt2/error.h"
#include "gpt2/ops/torch_compat.h"

namespace gpt2::ops {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// What the function needs besides the tensors.
struct Plan {
  int64_t rows;             // per chunk of the scoring
  int64_t padded;           // the vocabulary in the products
  torch::ScalarType dtype;  // of the products
  bool grad;                // make dx and dW in the forward
  std::function<Tensor(Tensor&, const Tensor&, const Tensor&, int64_t)> score;  // or the chunks
};

class FusedHeadLoss : public torch::autograd::Function<FusedHeadLoss> {
 public:
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& weight,
                        const Tensor& targets, Plan plan) {
    const int64_t N = x.size(0), C = x.size(1), V = weight.size(0), Vp = plan.padded;
    // Scored in float32, or in float64 for float64 products.
    const auto score = plan.dtype == torch::kDouble ? torch::kDouble : torch::kFloat;
    const auto scored = x.options().dtype(score);
    Tensor w = weight;  // (Vp, C) in the products' dtype, its pad rows zero
    if (Vp != V || weight.scalar_type() != plan.dtype) {
      w = torch::empty({Vp, C}, weight.options().dtype(plan.dtype));
      w.narrow(0, 0, V).copy_(weight);
      w.narrow(0, V, Vp - V).zero_();
    }
    const Tensor xs = x.to(plan.dtype);                                 // (N, C)
    Tensor logits = torch::mm(xs, w.t());                               // (N, Vp)
    const Tensor valid = targets.ne(-1);                                // (N)
    const Tensor count = valid.sum().to(score);                         // ()
    // d loss / d logits = (softmax - onehot) * factor, factor 1 / count on
    // rows with a target and 0 on the rest.
    const Tensor factor = plan.grad ? valid.to(score).div_(count).unsqueeze(1) : Tensor();
    Tensor loss;
    if (plan.score) {  // every row at once, by the device's kernel
      const Tensor rows = plan.score(logits, targets, plan.grad ? factor.view({N}) : Tensor(), V);
      if (rows.defined()) loss = rows.sum().to(score);
    }
    const bool chunks = !loss.defined();
    if (chunks) {
      // A pad logit takes no part in the softmax: exp(-inf) is 0, so its
      // probability, and below its gradient, are 0.
      logits.narrow(1, V, Vp - V).fill_(-std::numeric_limits<double>::infinity());
      loss = torch::zeros({}, scored);
    }
    for (int64_t r0 = 0; chunks && r0 < N; r0 += plan.rows) {
      const int64_t n = std::min(plan.rows, N - r0);
      Tensor chunk = logits.narrow(0, r0, n);                           // (n, Vp)
      Tensor scores = torch::log_softmax(chunk, 1, score);              // (n, Vp)
      const Tensor ok = valid.narrow(0, r0, n);                         // (n)
      const Tensor at = targets.narrow(0, r0, n).clamp_min(0).unsqueeze(1);  // (n, 1)
      Tensor nll = scores.gather(1, at).squeeze(1).neg_();              // (n)
      loss.add_(nll.masked_fill_(ok.logical_not(), 0.0).sum());
      if (!plan.grad) continue;
      scores.exp_().scatter_add_(1, at, torch::full({n, 1}, -1.0, scored));
      torch::mul_out(chunk, scores, factor.narrow(0, r0, n));           // the logits' place
    }
    if (plan.grad) {  // the products the backward would run, now, in one call each
      ctx->saved_data["dx"] = torch::mm(logits, w);                     // (N, C)
      ctx->saved_data["dw"] = torch::mm(logits.t(), xs).narrow(0, 0, V);  // (V, C)
      ctx->saved_data["x_dtype"] = static_cast<int64_t>(x.scalar_type());
      ctx->saved_data["w_dtype"] = static_cast<int64_t>(weight.scalar_type());
    }
    return loss.div_(count);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Tensor& scale = grad[0];  // () d out / d loss
    const auto dtype = [&](const char* key) {
      return static_cast<torch::ScalarType>(ctx->saved_data[key].toInt());
    };
    // Scaled in the inputs' dtype (float32 for a bf16 product's), not the product's.
    Tensor dx = ctx->saved_data["dx"].toTensor().to(dtype("x_dtype")) * scale;
    Tensor dw = ctx->saved_data["dw"].toTensor().to(dtype("w_dtype")) * scale;
    return {dx, dw, Tensor(), Tensor()};
  }
};

}  // namespace

Tensor fused_head_loss(const Tensor& x, const Tensor& weight, const Tensor& targets,
                       const HeadLossChunks& chunks) {
  if (!(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(1) &&
        targets.dim() == 1 && targets.size(0) == x.size(0) &&
        targets.scalar_type() == torch::kLong && chunks.rows >= 0 && chunks.pad_to >= 1)) {
    throw InputError(fmt::format(
        "fused_head_loss takes x (N, C), W (V, C), targets (N) int64, rows >= 0 and pad_to >= "
        "1; got x {}, W {}, targets {} {}, rows {}, pad_to {}", c10::str(x.sizes()),
        c10::str(weight.sizes()), c10::toString(targets.scalar_type()), c10::str(targets.sizes()),
        chunks.rows, chunks.pad_to));
  }
  const auto type = x.device().type();
  const compat::AutocastState autocast = compat::autocast_state(type);
  Plan plan;
  plan.dtype = autocast.enabled && (type == torch::kCPU || type == torch::kCUDA)
                   ? autocast.dtype
                   : x.scalar_type();
  plan.padded = round_up(weight.size(0), chunks.pad_to);
  plan.rows = chunks.rows > 0
                  ? chunks.rows
                  : std::max<int64_t>(64, kHeadLossChunkBytes / (4 * plan.padded) / 64 * 64);
  plan.grad = torch::GradMode::is_enabled() && (x.requires_grad() || weight.requires_grad());
  plan.score = chunks.score;
  return FusedHeadLoss::apply(x, weight, targets, plan);
}

}  // namespace gpt2::ops
