#include "gpt2/generate/generate.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <map>
#include <optional>

#include "gpt2/error.h"
#include "gpt2/model/eval_mode.h"

namespace gpt2 {
namespace {

void check_prompts(const std::vector<std::vector<int64_t>>& prompts, int64_t vocab_size) {
  for (size_t row = 0; row < prompts.size(); ++row) {
    if (prompts[row].empty()) throw InputError(fmt::format("prompt {} is empty", row));
    for (size_t i = 0; i < prompts[row].size(); ++i) {
      const int64_t id = prompts[row][i];
      if (id < 0 || id >= vocab_size) {
        throw InputError(fmt::format(
            "token id {} at position {} of prompt {} is outside the vocabulary [0, {})", id, i,
            row, vocab_size));
      }
    }
  }
}

// Generates for prompts of one length, `rows` giving each one's index in
// the caller's list; writes into `out`.
void generate_batch(GPTImpl& model, const std::vector<std::vector<int64_t>>& prompts,
                    const std::vector<size_t>& rows, const SamplingOptions& o,
                    at::Generator& generator, const TokenCallback& on_token,
                    std::vector<std::vector<int64_t>>& out) {
  const int64_t B = static_cast<int64_t>(rows.size());
  const int64_t block_size = model.config.block_size();
  const auto& weight = model.lm_head->weight;
  auto ctx = torch::empty({B, static_cast<int64_t>(prompts[rows[0]].size())}, torch::kLong);
  for (int64_t b = 0; b < B; ++b) {
    const auto& p = prompts[rows[b]];
    std::copy(p.begin(), p.end(), ctx[b].data_ptr<int64_t>());
  }
  ctx = ctx.to(weight.device());  // (B, T)
  std::optional<KVCache> cache;
  if (o.use_cache()) cache.emplace(model.config, B, weight.options());
  std::vector<bool> done(B, false);
  int64_t running = B;
  for (int64_t n = 0; n < o.max_new_tokens() && running > 0; ++n) {
    const int64_t t = ctx.size(1);
    torch::Tensor logits;  // (B, V)
    if (cache && cache->length() == t - 1 && t <= block_size) {
      logits = model.forward_cached(ctx.narrow(1, t - 1, 1), *cache);  // the new token only
    } else {
      auto cropped = t <= block_size ? ctx : ctx.narrow(1, t - block_size, block_size);
      if (cache) {
        cache->clear();
        logits = model.forward_cached(cropped, *cache);
      } else {
        logits = model.forward_last(cropped);
      }
    }
    auto next = sample_next(logits, o, generator).to(torch::kCPU);  // (B)
    ctx = torch::cat({ctx, next.to(ctx.device()).unsqueeze(1)}, 1);  // (B, T + 1)
    const int64_t* ids = next.data_ptr<int64_t>();
    for (int64_t b = 0; b < B; ++b) {
      if (done[b]) continue;
      out[rows[b]].push_back(ids[b]);
      if (on_token) on_token(rows[b], ids[b]);
      if (o.stop_token() && ids[b] == *o.stop_token()) {
        done[b] = true;
        --running;
      }
    }
  }
}

}  // namespace

std::vector<std::vector<int64_t>> generate(GPTImpl& model,
                                           const std::vector<std::vector<int64_t>>& prompts,
                                           const SamplingOptions& options,
                                           const TokenCallback& on_token) {
  validate(options);
  check_prompts(prompts, model.config.vocab_size());
  torch::NoGradGuard no_grad;
  EvalMode eval(model);
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(options.seed());
  std::map<size_t, std::vector<size_t>> by_length;
  for (size_t row = 0; row < prompts.size(); ++row) by_length[prompts[row].size()].push_back(row);
  std::vector<std::vector<int64_t>> out(prompts.size());
  for (const auto& [length, rows] : by_length) {
    generate_batch(model, prompts, rows, options, generator, on_token, out);
  }
  return out;
}

}  // namespace gpt2
