#include "gpt2/generate/generate.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>

#include "gpt2/error.h"
#include "gpt2/generate/batch_decoder.h"
#include "gpt2/generate/kv_cache.h"
#include "gpt2/ops/eval_mode.h"

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

// The tokens that followed the latest earlier occurrence of the context's
// last n tokens (n = 3, 2, 1, the longest that occurs), at most `k`.
std::vector<int64_t> lookup_draft(const std::vector<int64_t>& ctx, int64_t k) {
  const auto size = static_cast<int64_t>(ctx.size());
  for (int64_t n = std::min<int64_t>(3, size - 1); n >= 1; --n) {
    const auto tail = ctx.end() - n;
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (std::equal(tail, ctx.end(), ctx.begin() + start)) {
        const int64_t from = start + n, to = std::min(size, from + k);
        return {ctx.begin() + from, ctx.begin() + to};
      }
    }
  }
  return {};
}

// Greedy decoding of one prompt with prompt-lookup drafts; the cache holds
// every token of `ctx` but the last between steps.
std::vector<int64_t> lookup_generate(GPTImpl& model, std::vector<int64_t> ctx,
                                     const SamplingOptions& o, size_t row,
                                     const TokenCallback& on_token, LookupStats& stats) {
  const int64_t block = model.config.block_size();
  const auto& weight = model.lm_head->weight;
  const auto ids_tensor = [&](auto begin, auto end) {
    return torch::tensor(std::vector<int64_t>(begin, end), torch::kLong).unsqueeze(0).to(weight.device());
  };
  KVCache cache(model.config, 1, weight.options());
  if (static_cast<int64_t>(ctx.size()) <= block && ctx.size() > 1) {
    forward_cached(model, ids_tensor(ctx.begin(), ctx.end() - 1), cache);
  }
  std::vector<int64_t> out;
  while (static_cast<int64_t>(out.size()) < o.max_new_tokens()) {
    const auto size = static_cast<int64_t>(ctx.size());
    std::vector<int64_t> fresh;  // the tokens this step produces
    if (size > block) {
      // Past the block the context is cropped and positions shift: no
      // draft, one token from the cropped context (nanoGPT's way).
      const auto logits = model.forward_last(ids_tensor(ctx.end() - block, ctx.end()));
      check_logits(logits);
      fresh.push_back(logits.argmax(-1).item<int64_t>());
    } else {
      const int64_t room = block - cache.length() - 1;  // draft tokens that fit
      const auto draft = lookup_draft(ctx, std::min(o.prompt_lookup(), room));
      std::vector<int64_t> input = {ctx.back()};
      input.insert(input.end(), draft.begin(), draft.end());
      const int64_t before = cache.length();
      const auto logits = forward_cached_all(model, ids_tensor(input.begin(), input.end()), cache);
      check_logits(logits);
      const auto best = logits.argmax(-1)[0].to(torch::kCPU);  // (1 + draft)
      size_t j = 0;
      while (j < draft.size() && best[j].item<int64_t>() == draft[j]) ++j;
      fresh.assign(draft.begin(), draft.begin() + j);
      fresh.push_back(best[j].item<int64_t>());
      cache.truncate(before + 1 + static_cast<int64_t>(j));  // drop the rejected drafts
      stats.drafted += static_cast<int64_t>(draft.size());
      stats.accepted += static_cast<int64_t>(j);
    }
    ++stats.forwards;
    for (const int64_t t : fresh) {
      out.push_back(t);
      ctx.push_back(t);
      ++stats.tokens;
      if (on_token) on_token(row, t);
      if ((o.stop_token() && t == *o.stop_token()) ||
          static_cast<int64_t>(out.size()) == o.max_new_tokens()) {
        return out;
      }
    }
  }
  return out;
}

}  // namespace

std::vector<std::vector<int64_t>> generate(GPTImpl& model,
                                           const std::vector<std::vector<int64_t>>& prompts,
                                           const SamplingOptions& options,
                                           const TokenCallback& on_token, LookupStats* stats) {
  validate(options);
  check_prompts(prompts, model.config.vocab_size());
  if (options.stop_token() && (*options.stop_token() < 0 ||
                               *options.stop_token() >= model.config.vocab_size())) {
    throw InputError(fmt::format("stop_token {} is outside the vocabulary [0, {})",
                                 *options.stop_token(), model.config.vocab_size()));
  }
  torch::NoGradGuard no_grad;
  EvalMode eval(model);
  if (options.prompt_lookup() > 0) {
    LookupStats ignored;
    std::vector<std::vector<int64_t>> out;
    for (size_t row = 0; row < prompts.size(); ++row) {
      out.push_back(lookup_generate(model, prompts[row], options, row, on_token,
                                    stats ? *stats : ignored));
    }
    return out;
  }
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(options.seed());
  std::vector<std::vector<int64_t>> out(prompts.size());
  if (prompts.empty()) return out;
  // One batch of every prompt; the decoder's ids are the prompts' indices.
  const bool graphs = options.cuda_graphs() && model.lm_head->weight.device().is_cuda();
  BatchDecoder decoder(model, options.use_cache(),
                       graphs ? DecodeSteps::kGraphed : DecodeSteps::kDynamic);
  for (const auto& prompt : prompts) decoder.add(prompt);
  for (int64_t n = 0; n < options.max_new_tokens() && !decoder.empty(); ++n) {
    const auto next = sample_next(decoder.next_logits(), options, generator).to(torch::kCPU);
    const std::vector<int64_t> ids(next.data_ptr<int64_t>(), next.data_ptr<int64_t>() + next.numel());
    const std::vector<int64_t> rows = decoder.ids();
    decoder.append(ids);
    for (size_t r = 0; r < rows.size(); ++r) {
      const auto row = static_cast<size_t>(rows[r]);
      out[row].push_back(ids[r]);
      if (on_token) on_token(row, ids[r]);
      if (options.stop_token() && ids[r] == *options.stop_token()) decoder.remove(rows[r]);
    }
  }
  return out;
}

}  // namespace gpt2
