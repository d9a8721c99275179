#include "gpt2/generate/generate.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include "gpt2/error.h"
#include "gpt2/generate/batch_decoder.h"
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
  std::vector<std::vector<int64_t>> out(prompts.size());
  if (prompts.empty()) return out;
  // One batch of every prompt; the decoder's ids are the prompts' indices.
  BatchDecoder decoder(model, options.use_cache());
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
