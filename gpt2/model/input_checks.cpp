#include "gpt2/model/input_checks.h"

#include <fmt/format.h>

#include "gpt2/error.h"

namespace gpt2 {
namespace {

// Throws InputError naming the first element of `bad` (a bool mask shaped
// like `values`) as "<what> <value> at position (b, t) <why>".
void throw_first(const torch::Tensor& values, const torch::Tensor& bad,
                 const std::string& what, const std::string& why) {
  auto where = bad.nonzero()[0];  // (2): b, t
  const int64_t b = where[0].item<int64_t>(), t = where[1].item<int64_t>();
  throw InputError(fmt::format("{} {} at position ({}, {}) {}", what,
                               values[b][t].item<int64_t>(), b, t, why));
}

}  // namespace

namespace detail {

// idx on the model's device (torch's own message names neither), then
// check_token_ids. float16 runs on GPUs, as nanoGPT's dtype does (1.13 has
// no CPU LayerNorm for it).
void check_idx(const GPTImpl& model, const torch::Tensor& idx) {
  const torch::Device here = model.lm_head->weight.device();
  if (here.is_cpu() && model.lm_head->weight.scalar_type() == torch::kHalf) {
    throw InputError("the model's weights are float16, which runs on a GPU; on the CPU convert "
                     "them to float32 or bfloat16 (model->to(torch::kFloat))");
  }
  if (idx.defined() && idx.device() != here) {
    throw InputError(fmt::format("idx is on {} but the model is on {}: move it with .to({})",
                                 idx.device().str(), here.str(), here.str()));
  }
  check_token_ids(idx, model.config);
}

void check_targets(const torch::Tensor& targets, const torch::Tensor& idx,
                   const GPTConfig& config) {
  if (targets.device() != idx.device()) {
    throw InputError(fmt::format("targets are on {} but idx on {}", targets.device().str(),
                                 idx.device().str()));
  }
  if (targets.scalar_type() != torch::kLong || !targets.sizes().equals(idx.sizes())) {
    throw InputError(fmt::format(
        "targets must be int64 shaped like idx {}, got {} {}", c10::str(idx.sizes()),
        c10::toString(targets.scalar_type()), c10::str(targets.sizes())));
  }
  const int64_t v = config.vocab_size();
  auto bad = (targets < -1) | (targets >= v);
  if (bad.any().item<bool>()) {
    throw_first(targets, bad, "target",
                fmt::format("is outside the vocabulary [0, {}) and is not the "
                            "ignore index -1", v));
  }
}

}  // namespace detail

void check_token_ids(const torch::Tensor& idx, const GPTConfig& config) {
  if (!idx.defined()) throw InputError("idx is an undefined tensor");
  if (idx.dim() != 2 || idx.scalar_type() != torch::kLong || idx.layout() != torch::kStrided) {
    throw InputError(fmt::format(
        "idx must be a 2-D (B, T) int64 tensor, got {}{} {}",
        idx.layout() == torch::kStrided ? "" : c10::str(idx.layout(), " "),
        c10::toString(idx.scalar_type()), c10::str(idx.sizes())));
  }
  const int64_t t = idx.size(1);
  if (idx.size(0) < 1 || t < 1 || t > config.block_size()) {
    throw InputError(fmt::format(
        "idx {} needs B >= 1 and 1 <= T <= block_size {}, got B {} and T {}",
        c10::str(idx.sizes()), config.block_size(), idx.size(0), t));
  }
  const int64_t v = config.vocab_size();
  auto bad = (idx < 0) | (idx >= v);
  if (bad.any().item<bool>()) {
    throw_first(idx, bad, "token id", fmt::format("is outside the vocabulary [0, {})", v));
  }
}

}  // namespace gpt2
