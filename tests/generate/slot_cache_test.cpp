// SlotCache: a slot per sequence, each at its own length. The oracle is the
// model's plain forward over each sequence alone (forward_last), which no
// cache takes part in.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/generate/slot_cache.h"
#include "gpt2/model/gpt.h"
#include "test_util.h"

namespace gpt2 {
namespace {

GPT slot_model() {
  GPT model(testing::tiny_config().init(InitOptions().seed(5)));
  model->eval();
  return model;
}

torch::Tensor alone(GPT& model, const std::vector<int64_t>& tokens) {
  return model->forward_last(torch::tensor(tokens, torch::kLong).unsqueeze(0))[0];  // (V)
}

double gap(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

// Float32 sums over more (masked, exactly zero) terms than the plain
// forward's, perhaps in another order: a few ulps of logits of size ~1.
constexpr double kSlotTol = 1e-5;

// Two rows prefilled together, right-padded, into slots out of order; then
// each steps at its own length, over every position (fixed shapes) and
// over the filled ones only.
TEST(SlotCache, RowsOfDifferentLengthsGiveTheLogitsOfEachRowAlone) {
  GPT model = slot_model();
  torch::NoGradGuard no_grad;
  for (const bool fixed : {true, false}) {
    SlotCache cache(model->config, 3, model->lm_head->weight.options());
    cache.prefill(*model, testing::id_rows({{3, 1, 4, 1, 5}, {2, 7, 0, 0, 0}}), {1, 0}, {5, 2});
    EXPECT_EQ(cache.length(0), 2);
    EXPECT_EQ(cache.length(1), 5);
    EXPECT_EQ(cache.length(2), 0);
    std::vector<int64_t> a = {2, 7}, b = {3, 1, 4, 1, 5};
    for (int step = 0; step < 6; ++step) {
      a.push_back(10 + step);
      b.push_back(40 + step);
      cache.sync(2);
      const int64_t span = fixed ? cache.capacity() : cache.length(1) + 1;
      const auto logits = cache.step(*model, testing::id_rows({{a.back()}, {b.back()}}), span);  // (2, V)
      cache.advance(2);
      EXPECT_LT(gap(logits[0], alone(model, a)), kSlotTol) << "fixed " << fixed << " step " << step;
      EXPECT_LT(gap(logits[1], alone(model, b)), kSlotTol) << "fixed " << fixed << " step " << step;
    }
    EXPECT_EQ(cache.length(0), 8);
    EXPECT_EQ(cache.length(1), 11);
  }
}

// A row moved into a freed slot goes on as before; a free slot steps at
// position 0, seeing only its own token.
TEST(SlotCache, MoveCarriesARowAndAFreeSlotStartsAtPositionZero) {
  GPT model = slot_model();
  torch::NoGradGuard no_grad;
  SlotCache cache(model->config, 3, model->lm_head->weight.options());
  cache.prefill(*model, testing::id_rows({{9, 8, 7}, {6, 5, 0}}), {0, 2}, {3, 2});
  cache.move(2, 1);
  cache.free(2);
  EXPECT_EQ(cache.length(1), 2);
  cache.sync(3);
  const auto logits = cache.step(*model, testing::id_rows({{1}, {4}, {11}}), cache.capacity());
  EXPECT_LT(gap(logits[0], alone(model, {9, 8, 7, 1})), kSlotTol);
  EXPECT_LT(gap(logits[1], alone(model, {6, 5, 4})), kSlotTol);
  EXPECT_LT(gap(logits[2], alone(model, {11})), kSlotTol);
  EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
}

// A new prompt prefilled into a free slot leaves the running rows' keys
// and values alone.
TEST(SlotCache, APrefillIntoOneSlotLeavesTheOthersAlone) {
  GPT model = slot_model();
  torch::NoGradGuard no_grad;
  SlotCache cache(model->config, 2, model->lm_head->weight.options());
  cache.prefill(*model, testing::id_rows({{3, 3, 3, 3, 3, 3}}), {0}, {6});
  cache.prefill(*model, testing::id_rows({{20, 21}}), {1}, {2});
  cache.sync(2);
  const auto logits = cache.step(*model, testing::id_rows({{4}, {22}}), cache.capacity());
  EXPECT_LT(gap(logits[0], alone(model, {3, 3, 3, 3, 3, 3, 4})), kSlotTol);
  EXPECT_LT(gap(logits[1], alone(model, {20, 21, 22})), kSlotTol);
}

TEST(SlotCache, BadUseIsAnInputErrorNamingIt) {
  GPT model = slot_model();
  torch::NoGradGuard no_grad;
  const auto options = model->lm_head->weight.options();
  auto message = [](const std::function<void()>& f) { return testing::error_of<InputError>(f); };
  EXPECT_EQ(message([&] { SlotCache(model->config, 0, options); }),
            "SlotCache needs at least 1 slot, got 0");
  EXPECT_NE(message([&] { SlotCache(model->config, int64_t{1} << 40, options); })
                .find("a KV cache of 1099511627776 slots ("), std::string::npos);
  SlotCache cache(model->config, 2, options);
  EXPECT_EQ(message([&] { cache.length(5); }), "SlotCache has 2 slots; asked for the length of slot 5");
  EXPECT_EQ(message([&] { cache.move(0, -1); }), "SlotCache has 2 slots; asked to move to slot -1");
  EXPECT_EQ(message([&] { cache.prefill(*model, testing::id_rows({{1, 2}, {3, 4}}), {1, 1}, {2, 2}); }),
            "SlotCache::prefill names slot 1 twice");
  EXPECT_EQ(message([&] { cache.prefill(*model, testing::id_rows({{1, 2}}), {0}, {3}); }),
            "SlotCache::prefill: row 0 has length 3, outside [1, 2]");
  EXPECT_EQ(message([&] { cache.sync(3); }), "SlotCache has 2 slots; asked to step 3");
  EXPECT_EQ(cache.length(0), 0) << "a refused prefill sets no length";
  std::vector<int64_t> full(16, 1);
  cache.prefill(*model, torch::tensor(full).unsqueeze(0), {1}, {16});
  EXPECT_EQ(message([&] { cache.sync(2); }),
            "slot 1 holds 16 positions, all filled: no room for a step");
  SlotCache doubles(model->config, 1, torch::kDouble);
  EXPECT_NE(message([&] { doubles.prefill(*model, testing::id_rows({{1}}), {0}, {1}); }).find(" double on cpu; "),
            std::string::npos);
  // The model's own checks on what a store's caller hands it.
  EXPECT_NE(message([&] { model->forward_hidden(testing::id_rows({{1, 2}}), testing::id_rows({{0}}), cache, {}); })
                .find("forward_hidden takes positions [1, 2] int64 on cpu, as idx, got "),
            std::string::npos);
  EXPECT_NE(message([&] {
              model->forward_hidden(testing::id_rows({{1}}), testing::id_rows({{0}}), cache, torch::ones({1, 1, 2, 4}, torch::kBool));
            }).find("forward_hidden takes a mask (1 or 1, 1, 1, S) bool on cpu"),
            std::string::npos);
}

}  // namespace
}  // namespace gpt2
