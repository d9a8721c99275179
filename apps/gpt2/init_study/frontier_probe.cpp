#include "apps/gpt2/init_study/frontier_probe.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gpt2/model/modules.h"
#include "gpt2/ops/eval_mode.h"

namespace gpt2::app {

torch::Tensor attention_logits(BlockImpl& block, const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  const int64_t nh = block.config.n_head(), hs = C / nh;
  const auto qkv = block.attn->c_attn(block.ln_1(x)).split(C, /*dim=*/2);  // 3 x (B, T, C)
  const auto q = qkv[0].view({B, T, nh, hs}).transpose(1, 2);              // (B, nh, T, hs)
  const auto k = qkv[1].view({B, T, nh, hs}).transpose(1, 2);              // (B, nh, T, hs)
  auto att = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hs));
  const torch::Tensor future = causal_mask(T, 0, x.device());             // (T, T) or undefined
  if (future.defined()) att.masked_fill_(future, -std::numeric_limits<double>::infinity());
  return att;                                                              // (B, nh, T, T)
}

Probe probe(GPTImpl& model, const std::vector<Batch>& batches) {
  torch::NoGradGuard no_grad;
  EvalMode eval(model);
  Probe p;
  p.max_attn_logit = -std::numeric_limits<double>::infinity();
  double squares = 0;
  int64_t elements = 0;
  for (const Batch& batch : batches) {
    auto x = model.embed(batch.x);  // (B, T, C)
    for (size_t i = 0; i < model.transformer->h->size(); ++i) {
      Block block = model.block(i);
      p.max_attn_logit =
          larger_logit(p.max_attn_logit, attention_logits(*block, x).max().item<double>());
      x = block(x);  // (B, T, C)
    }
    squares += x.to(torch::kDouble).square().sum().item<double>();
    elements += x.numel();
    const auto logits = model.lm_head(model.transformer->ln_f(x));  // (B, T, V)
    p.loss += torch::cross_entropy_loss(logits.view({-1, logits.size(-1)}), batch.y.reshape({-1}))
                  .item<double>();
  }
  p.rms = std::sqrt(squares / static_cast<double>(std::max<int64_t>(1, elements)));
  p.loss /= static_cast<double>(std::max<size_t>(1, batches.size()));
  return p;
}

}  // namespace gpt2::app
