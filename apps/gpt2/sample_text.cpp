#include "apps/gpt2/sample_text.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

namespace gpt2::app {

std::vector<int64_t> sample_tokens(GPTImpl& model, std::vector<int64_t> prompt, int64_t n,
                                   double temperature, int64_t top_k, uint64_t seed) {
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t block = model.config.block_size();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t start = std::max<int64_t>(0, static_cast<int64_t>(prompt.size()) - block);
    const torch::Tensor idx =
        torch::tensor(std::vector<int64_t>(prompt.begin() + start, prompt.end())).unsqueeze(0);
    torch::Tensor logits = model.forward_last(idx) / temperature;  // (1, V)
    const int64_t k = std::min(top_k, logits.size(-1));
    if (k > 0) {
      const torch::Tensor kth = std::get<0>(logits.topk(k)).select(-1, k - 1).unsqueeze(-1);
      logits = logits.masked_fill(logits < kth, -INFINITY);
    }
    const torch::Tensor probs = torch::softmax(logits, -1);
    prompt.push_back(torch::multinomial(probs, 1, false, gen).item<int64_t>());
  }
  model.train(was_training);
  return prompt;
}

}  // namespace gpt2::app
