#include "gpt2/generate/generate.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>

#include "gpt2/error.h"

namespace gpt2 {

void validate(const SamplingOptions& o) {
  if (!(o.temperature() >= 0.0) || !std::isfinite(o.temperature())) {
    throw InputError(
        fmt::format("temperature must be a finite number >= 0, got {}", o.temperature()));
  }
  if (o.top_k() && *o.top_k() < 1) {
    throw InputError(fmt::format("top_k must be at least 1, got {}", *o.top_k()));
  }
  if (!(o.top_p() > 0.0 && o.top_p() <= 1.0)) {
    throw InputError(fmt::format("top_p must be in (0, 1], got {}", o.top_p()));
  }
  if (o.max_new_tokens() < 0) {
    throw InputError(fmt::format("max_new_tokens must be >= 0, got {}", o.max_new_tokens()));
  }
  if (o.prompt_lookup() < 0 || o.prompt_lookup() > 64) {
    throw InputError(fmt::format("prompt_lookup must be in [0, 64], got {}", o.prompt_lookup()));
  }
  if (o.prompt_lookup() > 0 && o.temperature() != 0.0) {
    throw InputError(fmt::format("prompt_lookup verifies greedy tokens: it needs temperature 0, "
                                 "got {}", o.temperature()));
  }
}

void check_logits(const torch::Tensor& logits) {
  if (torch::isfinite(logits).all().item<bool>()) return;
  const auto bad = torch::isfinite(logits).logical_not().nonzero()[0];  // its index
  std::string at;
  for (int64_t d = 0; d < bad.size(0); ++d) at += (d ? ", " : "") + std::to_string(bad[d].item<int64_t>());
  throw InputError(fmt::format("the logits hold NaN or infinity (first at [{}]): the model's "
                               "weights or its input are not finite numbers", at));
}

torch::Tensor sample_next(const torch::Tensor& logits, const SamplingOptions& o,
                          at::Generator& generator) {
  if (!logits.defined() || logits.dim() != 2 || logits.size(1) < 1 ||
      !torch::isFloatingType(logits.scalar_type())) {
    throw InputError(fmt::format(
        "sample_next needs (B, V) floating logits with V >= 1, got {}",
        logits.defined() ? c10::str(logits.scalar_type(), " ", logits.sizes()) : "none"));
  }
  check_logits(logits);
  // Below float's smallest normal number the division cannot stay finite:
  // such a temperature is greedy, as 0 is.
  if (o.temperature() < std::numeric_limits<float>::min()) return logits.argmax(-1);  // (B)
  // Each row's largest logit becomes 0 before the division, so a small
  // temperature sends the others to -inf (probability 0), never to NaN.
  // Drawn on the CPU, from the CPU generator, wherever the model runs: a
  // seed gives the same text on a GPU (one row of V floats to copy).
  auto shifted = logits.to(torch::kCPU, torch::kFloat);
  shifted = shifted - std::get<0>(shifted.max(-1, /*keepdim=*/true));  // (B, V), <= 0
  auto scaled = shifted / o.temperature();                                 // (B, V)
  constexpr double kNever = -std::numeric_limits<double>::infinity();
  if (o.top_k() && *o.top_k() < scaled.size(-1)) {
    // Everything below the k-th largest logit is dropped (ties kept).
    auto kth = std::get<0>(scaled.topk(*o.top_k(), -1)).select(-1, *o.top_k() - 1);  // (B)
    scaled = scaled.masked_fill(scaled < kth.unsqueeze(-1), kNever);
  }
  if (o.top_p() < 1.0) {
    auto [sorted, order] = scaled.sort(-1, /*descending=*/true);  // (B, V) each
    auto probs = sorted.softmax(-1);                               // (B, V)
    // Drop a token when the tokens ranked above it already reach top_p
    // (compared in double: a top_p below float's range is not 0). The most
    // likely token always stays.
    auto above = (probs.cumsum(-1) - probs).to(torch::kDouble);    // (B, V)
    auto drop_sorted = above >= o.top_p();
    drop_sorted.select(-1, 0).fill_(false);
    auto drop = torch::zeros_like(drop_sorted).scatter(-1, order, drop_sorted);
    scaled = scaled.masked_fill(drop, kNever);
  }
  auto probs = scaled.softmax(-1);  // (B, V)
  return torch::multinomial(probs, 1, /*replacement=*/false, generator).squeeze(-1);  // (B)
}

}  // namespace gpt2
