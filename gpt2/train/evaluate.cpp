#include "gpt2/train/evaluate.h"

#include <fmt/format.h>
#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/ops/eval_mode.h"

namespace gpt2 {
namespace {

// Eval mode and no gradients for a scope; the model's mode comes back after.
struct Scoring {
  explicit Scoring(GPTImpl& model) : eval(model) {}
  EvalMode eval;
  torch::NoGradGuard no_grad;
};

// -sum log p(targets) of logits (N, V) for targets (N). Half logits (a
// model decoding in bfloat16 or float16) are scored in float32, as the
// model's own loss scores them: a float16 sum overflows past 65504 and a
// bfloat16 one rounds to 8 bits. Summed in float32 per call (a batch of
// logits, near 16M values: about 1e-6 relative), then in double across calls.
double summed_nll(const torch::Tensor& logits, const torch::Tensor& targets) {
  namespace F = torch::nn::functional;
  return F::cross_entropy(logits.to(torch::kFloat), targets,
                          F::CrossEntropyFuncOptions().reduction(torch::kSum))
      .item<double>();
}

// Windows per forward so that the logits stay near 16M floats (64 MB).
int64_t default_batch(const GPTConfig& c) {
  return std::max<int64_t>(1, (int64_t{16} << 20) / (c.block_size() * c.vocab_size()));
}

}  // namespace

double TokenScore::mean_loss() const {
  return tokens > 0 ? nll / static_cast<double>(tokens) : std::numeric_limits<double>::quiet_NaN();
}

double TokenScore::perplexity() const { return std::exp(mean_loss()); }

TokenScore strided_score(GPTImpl& model, const std::vector<int32_t>& ids, int64_t stride,
                         int64_t window, const std::function<void(int64_t, int64_t)>& progress) {
  const int64_t block = model.config.block_size();
  if (window == 0) window = block;
  if (window < 2 || window > block) {
    throw InputError(fmt::format("the window must be in [2, block_size {}], got {}", block, window));
  }
  if (stride < 1 || stride > window) {
    throw InputError(fmt::format("the stride must be in [1, window {}], got {}", window, stride));
  }
  const auto n = static_cast<int64_t>(ids.size());
  if (n < 2) throw InputError(fmt::format("a text of {} tokens has nothing to predict", n));
  const int64_t vocab = model.config.vocab_size();
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      throw InputError(fmt::format("token id {} at position {} is outside the vocabulary [0, {})",
                                   ids[i], i, vocab));
    }
  }
  // The windows: [begin, end), scoring in-window positions [first, end - begin).
  struct Window {
    int64_t begin, end, first;
  };
  std::vector<Window> windows;
  for (int64_t begin = 0, prev_end = 0; begin < n; begin += stride) {
    const int64_t end = std::min(begin + window, n);
    const int64_t first = std::max<int64_t>(1, (end - begin) - (end - prev_end));
    if (first < end - begin) windows.push_back({begin, end, first});
    prev_end = end;
    if (end == n) break;
  }
  const Scoring scoring(model);
  // The head's logits are made for the positions scored, about `stride`
  // per window.
  const int64_t batch = std::max<int64_t>(
      1, (int64_t{16} << 20) / (std::min(stride, window) * model.config.vocab_size()));
  TokenScore score;
  // Windows of one length go through the model `batch` at a time.
  for (size_t w = 0; w < windows.size();) {
    const int64_t len = windows[w].end - windows[w].begin;
    size_t last = w;
    while (last < windows.size() && static_cast<int64_t>(last - w) < batch &&
           windows[last].end - windows[last].begin == len) {
      ++last;
    }
    std::vector<torch::Tensor> rows;
    for (size_t i = w; i < last; ++i) {
      rows.push_back(torch::tensor(std::vector<int64_t>(ids.begin() + windows[i].begin,
                                                        ids.begin() + windows[i].end)));
    }
    const torch::Tensor idx = torch::stack(rows).to(model.lm_head->weight.device());  // (b, len)
    const torch::Tensor hidden = model.forward_hidden(idx);     // (b, len, C)
    // The head on the positions scored only: with the stride at half the
    // window, half of them.
    std::vector<torch::Tensor> scored, targets;
    for (size_t i = w; i < last; ++i) {
      const auto r = static_cast<int64_t>(i - w);
      const int64_t first = windows[i].first;
      scored.push_back(hidden[r].slice(0, first - 1, len - 1));
      targets.push_back(idx[r].slice(0, first, len));
      score.tokens += len - first;
    }
    score.nll += summed_nll(model.lm_head(torch::cat(scored)), torch::cat(targets));
    w = last;
    if (progress) progress(score.tokens, n - 1);
  }
  return score;
}

TokenScore split_score(GPTImpl& model, const uint16_t* tokens, int64_t n, int64_t batch) {
  if (n < 2) throw InputError(fmt::format("a split of {} tokens has nothing to predict", n));
  if (tokens == nullptr) throw InputError(fmt::format("split_score: tokens is null for n = {}", n));
  const int64_t T = model.config.block_size(), vocab = model.config.vocab_size();
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] >= vocab) {
      throw InputError(fmt::format("token id {} at position {} is outside the model's vocabulary "
                                   "[0, {})", tokens[i], i, vocab));
    }
  }
  if (batch <= 0) batch = default_batch(model.config);
  const Scoring scoring(model);
  const torch::Device device = model.lm_head->weight.device();
  TokenScore score;
  const int64_t full = (n - 1) / T;  // windows of T inputs and T targets
  auto window = [&](int64_t start, int64_t len) {  // len + 1 tokens from `start`
    // LibTorch 1.13 has no uint16 dtype: widened here.
    return torch::tensor(std::vector<int64_t>(tokens + start, tokens + start + len + 1));
  };
  for (int64_t k = 0; k < full; k += batch) {
    const int64_t b = std::min(batch, full - k);
    std::vector<torch::Tensor> rows;
    for (int64_t j = 0; j < b; ++j) rows.push_back(window((k + j) * T, T));
    const torch::Tensor xy = torch::stack(rows).to(device);            // (b, T + 1)
    const torch::Tensor logits = model.forward(xy.slice(1, 0, T)).logits;  // (b, T, V)
    score.nll += summed_nll(logits.reshape({b * T, vocab}), xy.slice(1, 1).reshape({b * T}));
    score.tokens += b * T;
  }
  if (const int64_t rest = n - 1 - full * T; rest > 0) {
    const torch::Tensor xy = window(full * T, rest).unsqueeze(0).to(device);  // (1, rest + 1)
    const torch::Tensor logits = model.forward(xy.slice(1, 0, rest)).logits[0];  // (rest, V)
    score.nll += summed_nll(logits, xy[0].slice(0, 1));
    score.tokens += rest;
  }
  return score;
}

std::vector<TokenScore> ending_scores(GPTImpl& model, const std::vector<int32_t>& context,
                                      const std::vector<std::vector<int32_t>>& endings) {
  const int64_t block = model.config.block_size();
  if (context.empty()) throw InputError("a context of 0 tokens: an ending needs one to follow");
  if (endings.empty()) throw InputError("no ending to score");
  // Row r: the context's last keep[r] tokens, then ending r; its inputs are
  // all but the last token, and ending r's tokens are predicted by the
  // logits at [keep[r] - 1, keep[r] - 1 + ending size).
  std::vector<int64_t> keep;
  int64_t width = 0;
  for (size_t r = 0; r < endings.size(); ++r) {
    const auto n = static_cast<int64_t>(endings[r].size());
    if (n < 1 || n > block) {
      throw InputError(fmt::format("ending {} has {} tokens; an ending needs 1 to block_size {}",
                                   r, n, block));
    }
    for (const int32_t id : endings[r]) {
      if (id < 0 || id >= model.config.vocab_size()) {
        throw InputError(fmt::format("ending {} has token id {}, outside the vocabulary [0, {})",
                                     r, id, model.config.vocab_size()));
      }
    }
    keep.push_back(std::min<int64_t>(static_cast<int64_t>(context.size()), block + 1 - n));
    width = std::max(width, keep.back() + n - 1);
  }
  const auto rows = static_cast<int64_t>(endings.size());
  torch::Tensor idx = torch::zeros({rows, width}, torch::kLong);  // padding: id 0, never scored
  auto a = idx.accessor<int64_t, 2>();
  for (int64_t r = 0; r < rows; ++r) {
    const auto& e = endings[r];
    int64_t t = 0;
    for (auto it = context.end() - keep[r]; it != context.end(); ++it) a[r][t++] = *it;
    for (size_t j = 0; j + 1 < e.size(); ++j) a[r][t++] = e[j];
  }
  const Scoring scoring(model);
  const torch::Device device = model.lm_head->weight.device();
  const torch::Tensor logits = model.forward(idx.to(device)).logits;  // (rows, width, V)
  std::vector<TokenScore> scores;
  for (int64_t r = 0; r < rows; ++r) {
    const auto n = static_cast<int64_t>(endings[r].size());
    const torch::Tensor targets =
        torch::tensor(std::vector<int64_t>(endings[r].begin(), endings[r].end())).to(device);
    TokenScore s;
    s.tokens = n;
    s.nll = summed_nll(logits[r].slice(0, keep[r] - 1, keep[r] - 1 + n), targets);
    scores.push_back(s);
  }
  return scores;
}

}  // namespace gpt2
