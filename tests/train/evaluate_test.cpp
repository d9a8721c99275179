// Fixed-token evaluation (gpt2/train/evaluate.h, choices.h), against oracles that do
// not share its windowing: one forward per scored token over exactly the
// context Hugging Face's strided loop gives it, and the model's own loss.
#include "gpt2/train/evaluate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/train/choices.h"
#include "test_util.h"

namespace gpt2 {
namespace {

GPT seeded_model() {
  GPTConfig c = testing::tiny_config();  // block 16, vocab 96
  c.init().seed(7);
  return GPT(c);
}

std::vector<int32_t> ids_of(int64_t n, int32_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 37 + 11) % vocab));
  return ids;
}

// -log p(ids[i] | ids[begin..i)) from a forward over just that context.
double token_nll(GPT& model, const std::vector<int32_t>& ids, int64_t begin, int64_t i) {
  torch::NoGradGuard no_grad;
  const auto x = torch::tensor(std::vector<int64_t>(ids.begin() + begin, ids.begin() + i))
                     .unsqueeze(0);
  const auto logp = torch::log_softmax(model->forward_last(x).to(torch::kDouble), -1);
  return -logp[0][ids[i]].item<double>();
}

// Hugging Face's loop, written out per token: the window that first
// reaches token i scores it, with the context from that window's start.
TokenScore oracle(GPT& model, const std::vector<int32_t>& ids, int64_t stride, int64_t window) {
  TokenScore s;
  const auto n = static_cast<int64_t>(ids.size());
  int64_t prev_end = 0;
  for (int64_t begin = 0; begin < n; begin += stride) {
    const int64_t end = std::min(begin + window, n);
    for (int64_t i = std::max(prev_end, begin + 1); i < end; ++i) {
      s.nll += token_nll(model, ids, begin, i);
      ++s.tokens;
    }
    prev_end = end;
    if (end == n) break;
  }
  return s;
}

// float32 logits through differently shaped products: 1e-4 nats per token
// is far above their rounding (about 1e-6) and far below a wrong context.
constexpr double kPerTokenTolerance = 1e-4;

TEST(Evaluate, StridedScoreMatchesTheTokenByTokenOracleForEveryStride) {
  GPT model = seeded_model();
  model->eval();
  const auto ids = ids_of(53, 96);
  for (int64_t stride : {1, 5, 8, 15, 16}) {
    const TokenScore got = strided_score(*model, ids, stride);
    const TokenScore want = oracle(model, ids, stride, 16);
    EXPECT_EQ(got.tokens, want.tokens) << "stride " << stride;
    EXPECT_NEAR(got.nll, want.nll, kPerTokenTolerance * want.tokens) << "stride " << stride;
  }
}

TEST(Evaluate, StrideBelowTheWindowScoresEveryTokenButTheFirstOnce) {
  GPT model = seeded_model();
  const auto ids = ids_of(53, 96);
  EXPECT_EQ(strided_score(*model, ids, 8).tokens, 52);
  EXPECT_EQ(strided_score(*model, ids, 1).tokens, 52);
  // stride = window: each window's first token has no context: 4 windows.
  EXPECT_EQ(strided_score(*model, ids, 16).tokens, 53 - 4);
  EXPECT_NEAR(strided_score(*model, ids, 8).perplexity(),
              std::exp(strided_score(*model, ids, 8).mean_loss()), 1e-9);
}

TEST(Evaluate, SplitScoreIsTheModelsOwnLossOverNonOverlappingWindows) {
  GPT model = seeded_model();
  model->eval();
  const int64_t n = 16 * 3 + 6;  // three full windows and one of 5 targets
  std::vector<uint16_t> tokens;
  for (int32_t id : ids_of(n, 96)) tokens.push_back(static_cast<uint16_t>(id));
  double want = 0;
  {
    torch::NoGradGuard no_grad;
    for (int64_t start = 0; start < n - 1; start += 16) {
      const int64_t len = std::min<int64_t>(16, n - 1 - start);
      std::vector<int64_t> x(tokens.begin() + start, tokens.begin() + start + len);
      std::vector<int64_t> y(tokens.begin() + start + 1, tokens.begin() + start + len + 1);
      const auto loss = model->forward(torch::tensor(x).unsqueeze(0), torch::tensor(y).unsqueeze(0)).loss;
      want += loss.item<double>() * static_cast<double>(len);
    }
  }
  for (int64_t batch : {1, 2, 8}) {
    const TokenScore got = split_score(*model, tokens.data(), n, batch);
    EXPECT_EQ(got.tokens, n - 1);
    EXPECT_NEAR(got.nll, want, kPerTokenTolerance * (n - 1)) << "batch " << batch;
  }
}

// A model decoding in bfloat16 (as `gpt2 eval --dtype bfloat16` makes it
// on a GPU) gives half logits; they are scored in float32, as its own loss
// scores them. Summed in bfloat16, 1,024 losses of about 4.6 would be off by
// up to 2 nats a batch (its spacing at 512 is 4): 0.016 a token.
TEST(Evaluate, HalfLogitsAreScoredInFloat32) {
  GPT model = seeded_model();
  model->to(torch::kBFloat16);
  model->eval();
  const int64_t n = 16 * 64 + 1;
  std::vector<uint16_t> tokens;
  for (int32_t id : ids_of(n, 96)) tokens.push_back(static_cast<uint16_t>(id));
  double want = 0;
  {
    torch::NoGradGuard no_grad;
    for (int64_t start = 0; start < n - 1; start += 16) {
      std::vector<int64_t> x(tokens.begin() + start, tokens.begin() + start + 16);
      std::vector<int64_t> y(tokens.begin() + start + 1, tokens.begin() + start + 17);
      const auto loss = model->forward(torch::tensor(x).unsqueeze(0), torch::tensor(y).unsqueeze(0)).loss;
      ASSERT_EQ(loss.scalar_type(), torch::kFloat);
      want += loss.item<double>() * 16;
    }
  }
  const TokenScore got = split_score(*model, tokens.data(), n, 64);
  EXPECT_EQ(got.tokens, n - 1);
  EXPECT_NEAR(got.nll, want, kPerTokenTolerance * (n - 1));
  const auto ids = ids_of(201, 96);  // the strided loop against its oracle, in one batch
  const TokenScore strided = strided_score(*model, ids, 8), oracle_score = oracle(model, ids, 8, 16);
  EXPECT_NEAR(strided.nll, oracle_score.nll, kPerTokenTolerance * oracle_score.tokens);
}

TEST(Evaluate, LeavesTheModelInItsModeAndRefusesBadArgumentsByName) {
  GPT model = seeded_model();
  model->train();
  const auto ids = ids_of(20, 96);
  strided_score(*model, ids, 4);
  EXPECT_TRUE(model->is_training());
  auto message = [&](auto&& f) -> std::string {
    try {
      f();
    } catch (const InputError& e) {
      return e.what();
    }
    return "no InputError";
  };
  EXPECT_EQ(message([&] { strided_score(*model, ids, 17); }),
            "the stride must be in [1, window 16], got 17");
  EXPECT_EQ(message([&] { strided_score(*model, ids, 4, 17); }),
            "the window must be in [2, block_size 16], got 17");
  EXPECT_EQ(message([&] { strided_score(*model, {5}, 1); }), "a text of 1 tokens has nothing to predict");
  EXPECT_EQ(message([&] { strided_score(*model, {5, 96, 3}, 1); }),
            "token id 96 at position 1 is outside the vocabulary [0, 96)");
  const uint16_t big[] = {1, 2, 400};
  EXPECT_EQ(message([&] { split_score(*model, big, 3); }),
            "token id 400 at position 2 is outside the model's vocabulary [0, 96)");
  EXPECT_EQ(message([&] { split_score(*model, nullptr, 100); }),
            "split_score: tokens is null for n = 100");
}

// Each ending's tokens, scored one forward per token over the row's
// context (the context's last `keep` tokens, then the ending so far).
TokenScore ending_oracle(GPT& model, const std::vector<int32_t>& context,
                         const std::vector<int32_t>& ending, int64_t keep) {
  std::vector<int32_t> row(context.end() - keep, context.end());
  row.insert(row.end(), ending.begin(), ending.end());
  TokenScore s;
  for (int64_t i = keep; i < static_cast<int64_t>(row.size()); ++i) {
    s.nll += token_nll(model, row, 0, i);
    ++s.tokens;
  }
  return s;
}

TEST(Evaluate, EndingScoresMatchTheOracleForEndingsOfEveryLengthInOneBatch) {
  GPT model = seeded_model();
  model->eval();
  const auto context = ids_of(6, 96);
  const std::vector<std::vector<int32_t>> endings = {{3}, {4, 5, 6}, {7, 8}, ids_of(10, 96)};
  const auto got = ending_scores(*model, context, endings);
  ASSERT_EQ(got.size(), endings.size());
  for (size_t k = 0; k < endings.size(); ++k) {
    const TokenScore want = ending_oracle(model, context, endings[k], 6);
    EXPECT_EQ(got[k].tokens, want.tokens) << "ending " << k;
    EXPECT_NEAR(got[k].nll, want.nll, kPerTokenTolerance * want.tokens) << "ending " << k;
  }
}

TEST(Evaluate, EndingScoresCutALongContextFromTheLeftAndRefuseBadEndings) {
  GPT model = seeded_model();  // block 16
  const auto context = ids_of(30, 96);
  const std::vector<int32_t> ending = {1, 2, 3, 4, 5};
  const auto got = ending_scores(*model, context, {ending, {9}});
  // 16 inputs + 1: the context's last 12 tokens before 5 ending tokens.
  EXPECT_NEAR(got[0].nll, ending_oracle(model, context, ending, 12).nll, kPerTokenTolerance * 5);
  EXPECT_NEAR(got[1].nll, ending_oracle(model, context, {9}, 16).nll, kPerTokenTolerance);
  EXPECT_EQ(testing::error_of<InputError>([&] { ending_scores(*model, context, {ids_of(17, 96)}); }),
            "ending 0 has 17 tokens; an ending needs 1 to block_size 16");
  EXPECT_EQ(testing::error_of<InputError>([&] { ending_scores(*model, context, {{1}, {}}); }),
            "ending 1 has 0 tokens; an ending needs 1 to block_size 16");
  EXPECT_EQ(testing::error_of<InputError>([&] { ending_scores(*model, {}, {{1}}); }),
            "a context of 0 tokens: an ending needs one to follow");
  EXPECT_EQ(testing::error_of<InputError>([&] { ending_scores(*model, context, {{1, 96}}); }),
            "ending 0 has token id 96, outside the vocabulary [0, 96)");
}

TEST(Choices, ReadsHellaSwagsSchemaAndScoresAccAndAccNorm) {
  testing::TempDir dir;
  const std::string path = dir / "c.jsonl";
  {
    std::ofstream f(path);
    f << R"({"ind": 4, "ctx": "ab", "endings": ["c", "dd"], "label": 1, "split": "val"})" << "\n\n"
      << R"({"ctx": "x", "endings": ["y", "z", "w"], "label": 0})" << "\r\n";
  }
  const auto items = read_choices(path);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].context, "ab");
  EXPECT_EQ(items[0].endings, (std::vector<std::string>{"c", "dd"}));
  EXPECT_EQ(items[0].label, 1);
  EXPECT_EQ(items[1].line, 3);
  EXPECT_EQ(items[1].endings.size(), 3u);

  // A tokenizer of bytes, and a model whose scores the test knows: the
  // tally picks by the smallest sum and by the smallest mean.
  GPT model = seeded_model();
  model->eval();
  const auto encode = [](std::string_view text) {
    std::vector<int32_t> ids;
    for (const char c : text) ids.push_back(static_cast<unsigned char>(c) % 96);
    return ids;
  };
  const ChoiceResult r = score_choices(*model, items, encode);
  int64_t want = 0, want_norm = 0;
  for (const auto& item : items) {
    std::vector<std::vector<int32_t>> endings;
    for (const auto& e : item.endings) endings.push_back(encode(" " + e));
    const auto scores = ending_scores(*model, encode(item.context), endings);
    int64_t best = 0, best_norm = 0;
    for (size_t k = 1; k < scores.size(); ++k) {
      if (scores[k].nll < scores[best].nll) best = k;
      if (scores[k].mean_loss() < scores[best_norm].mean_loss()) best_norm = k;
    }
    want += best == item.label;
    want_norm += best_norm == item.label;
  }
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.correct, want);
  EXPECT_EQ(r.correct_norm, want_norm);
  EXPECT_DOUBLE_EQ(r.acc(), want / 2.0);
  // A label outside the endings is the item's error, not a wrong answer.
  for (const int64_t label : {int64_t{-1}, static_cast<int64_t>(items[1].endings.size())}) {
    auto bad = items;
    bad[1].label = label;
    try {
      score_choices(*model, bad, encode);
      ADD_FAILURE() << "label " << label << " accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), fmt::format("line 3: the label {} is not an index of its 3 "
                                                   "endings", label));
    }
  }
}

}  // namespace
}  // namespace gpt2
