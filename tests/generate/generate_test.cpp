#include "gpt2/generate/generate.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>
#include <limits>
#include <string>

#include "gpt2/error.h"
#include "gpt2/generate/batch_decoder.h"
#include "gpt2/generate/kv_cache.h"
#include "gpt2/generate/scheduler.h"
#include "test_util.h"

namespace gpt2 {
namespace {

// block_size 16: a 40-token generation crosses it.
GPT tiny_model(uint64_t seed = 7) {
  GPT model(testing::tiny_config().init(InitOptions().seed(seed)));
  model->eval();
  return model;
}

SamplingOptions greedy(int64_t n) { return SamplingOptions().temperature(0).max_new_tokens(n); }

// How each of n scheduler requests ended, filled by their on_finish.
struct Endings {
  explicit Endings(size_t n) : why(n) {}
  std::function<void(FinishReason)> on_finish(size_t i) {
    return [this, i](FinishReason reason) {
      std::lock_guard<std::mutex> lock(m);
      why[i] = reason;
      done.notify_all();
    };
  }
  // Whether every request ended within 20 s.
  bool wait() {
    std::unique_lock<std::mutex> lock(m);
    return done.wait_for(lock, std::chrono::seconds(20), [&] {
      for (const auto& w : why) {
        if (!w) return false;
      }
      return true;
    });
  }
  std::mutex m;
  std::condition_variable done;
  std::vector<std::optional<FinishReason>> why;
};

TEST(KVCache, LogitsEqualFullRecomputeAtEveryStep) {
  GPT model = tiny_model();
  torch::NoGradGuard no_grad;
  torch::manual_seed(1);
  auto ctx = torch::randint(96, {2, 5});
  KVCache cache(model->config, 2, model->lm_head->weight.options());
  auto cached = forward_cached(*model, ctx, cache);  // prefill
  for (int step = 0; step < 11; ++step) {  // up to block_size 16
    auto full = model->forward_last(ctx);
    // Both are the same float32 ops on the same numbers but in different
    // groupings (one query vs all); 1e-4 is far above float32 rounding at
    // logits of size ~1 and far below any real difference.
    EXPECT_LT((cached - full).abs().max().item<double>(), 1e-4) << "step " << step;
    auto next = full.argmax(-1, /*keepdim=*/true);  // (B, 1)
    ctx = torch::cat({ctx, next}, 1);
    if (ctx.size(1) > 16) break;
    cached = forward_cached(*model, next, cache);
  }
  EXPECT_EQ(cache.length(), 16);
}

TEST(KVCache, AppendWritesInPlaceWithoutReallocating) {
  const GPTConfig config = testing::tiny_config();
  KVCache cache(config, 1, torch::TensorOptions());
  auto k = torch::randn({1, 4, 3, 8});
  const void* base = cache.append(0, k, k).first.data_ptr();
  cache.advance(3);
  auto [keys, values] = cache.append(0, k.narrow(2, 0, 1), k.narrow(2, 0, 1));
  EXPECT_EQ(keys.data_ptr(), base);
  EXPECT_EQ(keys.size(2), 4);
  EXPECT_TRUE(torch::equal(keys.narrow(2, 0, 3), k));
}

TEST(Generate, CacheGivesTheSameTokensAsRecomputeAlsoPastBlockSize) {
  GPT model = tiny_model();
  const std::vector<std::vector<int64_t>> prompts = {{1, 2, 3, 4, 5}};
  auto with = generate(*model, prompts, greedy(40));
  auto without = generate(*model, prompts, greedy(40).use_cache(false));
  ASSERT_EQ(with[0].size(), 40u);  // 45 tokens: cropped from 17 on
  EXPECT_EQ(with, without);
  // Sampled too (same seed, same logits to ~1e-6: the same draws).
  auto o = SamplingOptions().max_new_tokens(40).seed(3);
  EXPECT_EQ(generate(*model, prompts, o), generate(*model, prompts, o.use_cache(false)));
}

TEST(Generate, SameSeedSameTokensOtherSeedOtherTokens) {
  GPT model = tiny_model();
  const std::vector<std::vector<int64_t>> prompts = {{10, 11}};
  auto o = SamplingOptions().max_new_tokens(30);
  EXPECT_EQ(generate(*model, prompts, o.seed(1)), generate(*model, prompts, o.seed(1)));
  EXPECT_NE(generate(*model, prompts, o.seed(1)), generate(*model, prompts, o.seed(2)));
}

TEST(Generate, BatchOfPromptsEqualsEachAloneWhenGreedy) {
  GPT model = tiny_model();
  const std::vector<std::vector<int64_t>> prompts = {{1, 2, 3}, {4}, {5, 6, 7}, {8, 9}};
  std::vector<std::vector<int64_t>> alone;
  for (const auto& p : prompts) alone.push_back(generate(*model, {p}, greedy(12))[0]);
  EXPECT_EQ(generate(*model, prompts, greedy(12)), alone);
}

// Left padding: each row of a batch of mixed lengths gets the logits of its
// prompt alone, at every step and past block_size (the failure of left
// padding without per-row positions and masks).
TEST(Generate, MixedLengthBatchEqualsEachAloneGreedyPastTheBlockAndWithoutACache) {
  GPT model = tiny_model();
  const std::vector<std::vector<int64_t>> prompts = {{1}, {2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}};
  for (const bool cache : {true, false}) {
    std::vector<std::vector<int64_t>> alone;
    for (const auto& p : prompts) alone.push_back(generate(*model, {p}, greedy(24).use_cache(cache))[0]);
    EXPECT_EQ(generate(*model, prompts, greedy(24).use_cache(cache)), alone) << "cache " << cache;
  }
}

// Prompt-lookup decoding gives plain greedy's tokens, past the block too. A
// wide init (std 0.5) spreads the logits, so no argmax sits on a near-tie
// that a differently shaped product could flip.
TEST(Generate, PromptLookupEqualsPlainGreedyForEveryDraftLength) {
  GPT model(testing::tiny_config().init(InitOptions().seed(3).std(0.5)));
  model->eval();
  const std::vector<std::vector<int64_t>> prompts = {
      {5, 6, 7, 8, 5, 6, 7, 8, 5, 6}, {1, 2, 3}, {9}, {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}};
  for (const int64_t k : {1, 3, 8}) {
    LookupStats stats;
    const auto got = generate(*model, prompts, greedy(30).prompt_lookup(k), {}, &stats);
    EXPECT_EQ(got, generate(*model, prompts, greedy(30))) << "k " << k;
    EXPECT_GT(stats.drafted, 0);
    EXPECT_EQ(stats.tokens, 4 * 30);
    EXPECT_LE(stats.forwards, stats.tokens);
  }
  EXPECT_THROW(generate(*model, prompts, greedy(4).prompt_lookup(2).temperature(0.5)), InputError);
}

// Sequences join and leave between steps, as a server's requests do; each
// one's greedy tokens are those it gets alone.
TEST(BatchDecoder, SequencesJoinAndLeaveBetweenStepsAndEachGetsItsOwnTokens) {
  GPT model = tiny_model();
  torch::NoGradGuard no_grad;
  BatchDecoder d(*model);
  auto step = [&] {
    const auto next = d.next_logits().argmax(-1);
    d.append(std::vector<int64_t>(next.data_ptr<int64_t>(), next.data_ptr<int64_t>() + next.numel()));
  };
  const int64_t a = d.add({1, 2, 3});
  step();
  step();
  const int64_t b = d.add({4});
  EXPECT_EQ(d.ids(), (std::vector<int64_t>{a, b}));
  step();
  step();
  const int64_t c = d.add({5, 6, 7, 8, 9, 10, 11});
  step();
  d.remove(a);
  EXPECT_EQ(d.ids(), (std::vector<int64_t>{c, b})) << "the last row takes the place of one that left";
  for (int i = 0; i < 14; ++i) step();  // past block_size 16 for c
  const auto alone = [&](std::vector<int64_t> p, int64_t n) {
    auto tokens = generate(*model, {p}, greedy(n))[0];
    p.insert(p.end(), tokens.begin(), tokens.end());
    return p;
  };
  EXPECT_EQ(d.tokens(b), alone({4}, 17));
  EXPECT_EQ(d.tokens(c), alone({5, 6, 7, 8, 9, 10, 11}, 15));
  d.remove(b);
  d.remove(c);
  EXPECT_TRUE(d.empty());
  EXPECT_THROW(d.add({}), InputError);
  EXPECT_THROW(d.add({96}), InputError);
}

// A deadline ends a request at the first step after it: one decoding (its
// client takes 20 ms per token, so 100 tokens would take 2 s) and one still
// waiting behind it (one place), whose deadline has passed already.
TEST(Scheduler, ADeadlineEndsARequestDecodingOrWaiting) {
  Scheduler scheduler(tiny_model(), /*max_batch=*/1);
  Endings end(2);
  std::mutex& m = end.m;
  const auto& why = end.why;
  std::vector<int64_t> tokens(2, 0);
  const auto now = std::chrono::steady_clock::now();
  for (int i = 0; i < 2; ++i) {
    GenerationRequest r;
    r.prompt = {1, 2, 3};
    r.options = SamplingOptions().temperature(0).max_new_tokens(100);
    r.deadline = i == 0 ? now + std::chrono::milliseconds(150) : now;
    r.on_token = [&, i](int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::lock_guard<std::mutex> lock(m);
      ++tokens[i];
      return true;
    };
    r.on_finish = end.on_finish(i);
    scheduler.submit(std::move(r));
  }
  ASSERT_TRUE(end.wait());
  std::lock_guard<std::mutex> lock(m);
  EXPECT_EQ(*why[0], FinishReason::kTimeLimit);
  EXPECT_EQ(*why[1], FinishReason::kTimeLimit);
  EXPECT_GE(tokens[0], 1);
  EXPECT_LT(tokens[0], 100);
  EXPECT_EQ(tokens[1], 0);
  EXPECT_EQ(to_string(FinishReason::kTimeLimit), "time_limit");
}

TEST(Generate, StopsAtStopTokenAndStreamsEveryToken) {
  GPT model = tiny_model();
  const std::vector<std::vector<int64_t>> prompts = {{1, 2, 3}};
  const auto free_run = generate(*model, prompts, greedy(12))[0];
  const int64_t stop = free_run[4];
  std::vector<int64_t> streamed;
  auto stopped = generate(*model, prompts, greedy(12).stop_token(stop),
                          [&](size_t row, int64_t token) {
                            EXPECT_EQ(row, 0u);
                            streamed.push_back(token);
                          })[0];
  auto first = std::find(free_run.begin(), free_run.end(), stop);
  EXPECT_EQ(stopped, std::vector<int64_t>(free_run.begin(), first + 1));
  EXPECT_EQ(streamed, stopped);
}

TEST(Generate, RestoresTrainModeAndLeavesNoGradient) {
  GPT model = tiny_model();
  model->train();
  generate(*model, {{1, 2}}, greedy(3));
  EXPECT_TRUE(model->is_training());
  EXPECT_FALSE(model->lm_head->weight.grad().defined());
}

TEST(Generate, BadOptionsAndPromptsAreInputErrorsNamingTheValue) {
  GPT model = tiny_model();
  auto expect_error = [&](const std::vector<std::vector<int64_t>>& prompts,
                          const SamplingOptions& o, const std::string& fragment) {
    try {
      generate(*model, prompts, o);
      FAIL() << "no error for " << fragment;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  const std::vector<std::vector<int64_t>> ok = {{1}};
  expect_error(ok, SamplingOptions().temperature(-1), "temperature must be a finite number >= 0, got -1");
  expect_error(ok, SamplingOptions().temperature(std::nan("")), "got nan");
  expect_error(ok, SamplingOptions().top_k(0), "top_k must be at least 1, got 0");
  expect_error(ok, SamplingOptions().top_p(0), "top_p must be in (0, 1], got 0");
  expect_error(ok, SamplingOptions().top_p(1.5), "got 1.5");
  expect_error({{1}, {}}, SamplingOptions(), "prompt 1 is empty");
  expect_error({{1, 96}}, SamplingOptions(),
               "token id 96 at position 1 of prompt 0 is outside the vocabulary [0, 96)");
  expect_error(ok, SamplingOptions().stop_token(96), "stop_token 96 is outside the vocabulary [0, 96)");
  expect_error(ok, SamplingOptions().stop_token(-5), "stop_token -5 is outside");
}

// A cache that cannot be allocated, or was made for another model, and
// every misuse of the cache or the batch decoder: InputErrors in the
// library's words, never the allocator's or a broadcast's.
TEST(KVCache, MisuseIsAnInputErrorNamingTheValues) {
  GPT model = tiny_model();
  torch::NoGradGuard no_grad;
  const auto idx = torch::zeros({1, 3}, torch::kLong);
  auto message = [](const std::function<void()>& f) { return testing::error_of<InputError>(f); };
  EXPECT_NE(message([&] { KVCache(model->config, int64_t{1} << 40, torch::kFloat); })
                .find("a KV cache of 1099511627776 rows ("), std::string::npos);
  KVCache wide(GPTConfig(model->config).n_embd(2 * model->config.n_embd()), 1, torch::kFloat);
  EXPECT_NE(message([&] { forward_cached(*model, idx, wide); }).find(c10::str(
                "the KV cache holds ", model->config.n_head(), " heads of ",
                2 * model->config.n_embd() / model->config.n_head(), " float on cpu; the model gives ",
                model->config.n_head(), " of ", model->config.n_embd() / model->config.n_head())),
            std::string::npos);
  KVCache doubles(model->config, 1, torch::kDouble);
  EXPECT_NE(message([&] { forward_cached(*model, idx, doubles); }).find(" double on cpu; "),
            std::string::npos);
  EXPECT_EQ(doubles.length(), 0);  // nothing written
  KVCache cache(model->config, 2, torch::kFloat);
  EXPECT_EQ(message([&] { cache.truncate(-1); }), "KVCache cannot truncate to -1 of 0 filled");
  EXPECT_EQ(message([&] { cache.advance(40); }), "KVCache cannot advance by 40 from 0 of 16");

  BatchDecoder decoder(*model);
  EXPECT_EQ(message([&] { decoder.next_logits(); }), "next_logits of an empty batch");
  EXPECT_EQ(message([&] { decoder.remove(42); }), "sequence 42 is not in the batch");
  decoder.add({1, 2});
  decoder.next_logits();
  EXPECT_EQ(message([&] { decoder.next_logits(); }), "next_logits called twice without append");
  EXPECT_EQ(message([&] { decoder.append({1, 2}); }), "append needs one token per row (1), got 2");
}

TEST(Generate, ForwardCachedRejectsWrongBatchAndOverflow) {
  GPT model = tiny_model();
  torch::NoGradGuard no_grad;
  KVCache cache(model->config, 1, torch::TensorOptions());
  EXPECT_THROW(forward_cached(*model, torch::zeros({2, 3}, torch::kLong), cache), InputError);
  forward_cached(*model, torch::zeros({1, 10}, torch::kLong), cache);
  EXPECT_THROW(forward_cached(*model, torch::zeros({1, 7}, torch::kLong), cache), InputError);
  EXPECT_EQ(cache.length(), 10);
}

// --- sampling ---------------------------------------------------------------

// Logits that are not (B, V) floats are named, not passed to torch's
// multinomial or max.
TEST(Sampling, LogitsOfAnotherShapeOrKindAreAnInputError) {
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(1);
  auto message = [&](const torch::Tensor& logits) {
    return testing::error_of<InputError>([&] { sample_next(logits, SamplingOptions(), g); });
  };
  const std::string needs = "sample_next needs (B, V) floating logits with V >= 1, got ";
  EXPECT_EQ(message(torch::zeros({1, 2, 5})), needs + "Float [1, 2, 5]");
  EXPECT_EQ(message(torch::zeros({5})), needs + "Float [5]");
  EXPECT_EQ(message(torch::zeros({1, 0})), needs + "Float [1, 0]");
  EXPECT_EQ(message(torch::zeros({1, 5}, torch::kInt)), needs + "Int [1, 5]");
  EXPECT_EQ(message(torch::Tensor()), needs + "none");
}

TEST(Sampling, TemperatureZeroIsArgmaxAndTopKOneToo) {
  auto logits = torch::tensor({{0.1, 2.0, -1.0, 1.9}, {3.0, 0.0, 0.0, 0.0}});
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(1);
  auto expected = torch::tensor({1, 0}, torch::kLong);
  EXPECT_TRUE(torch::equal(sample_next(logits, SamplingOptions().temperature(0), g), expected));
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(torch::equal(sample_next(logits, SamplingOptions().top_k(1), g), expected));
  }
}

TEST(Sampling, TopKAndTopPKeepOnlyTheirTokens) {
  // Probabilities 0.5, 0.3, 0.15, 0.05.
  auto logits = torch::tensor({0.5, 0.3, 0.15, 0.05}).log().unsqueeze(0).expand({2000, 4});
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(2);
  auto k2 = sample_next(logits, SamplingOptions().top_k(2), g);
  EXPECT_TRUE((k2 < 2).all().item<bool>());
  // top_p 0.7: 0.5 alone does not reach it, 0.5 + 0.3 does: two tokens.
  auto p = sample_next(logits, SamplingOptions().top_p(0.7), g);
  EXPECT_TRUE((p < 2).all().item<bool>());
  // Both kept tokens do occur, in about their renormalized ratio 5:3
  // (0.625 of 2000 draws; 0.05 is over 10 standard errors of 0.011).
  const double share = (p == 0).to(torch::kDouble).mean().item<double>();
  EXPECT_NEAR(share, 0.625, 0.05);
  // Without limits all four occur.
  auto all = sample_next(logits, SamplingOptions(), g);
  EXPECT_EQ(std::get<0>(at::_unique(all)).numel(), 4);
}

// Temperatures and top_p down to the denormals: a draw, never NaN and
// never a throw; below float's smallest normal number the draw is greedy,
// and the most likely token survives any top_p. On the host and with the
// device's draw (here on the CPU).
TEST(Sampling, TinyTemperaturesAndTopPsDrawTheLikeliestTokenWithoutNaN) {
  auto logits = torch::tensor({{0.1, 2.0, -1.0, 1.9}, {3.0, 0.0, 0.0, 0.0}});
  const auto best = torch::tensor({1, 0}, torch::kLong);
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(3);
  for (Draw draw : {Draw::kHost, Draw::kDevice}) {
    const SamplingOptions o = SamplingOptions().draw(draw);
    for (double t : {1e-3, 1e-30, 1e-39, 1e-45, 1e-300, 5e-324}) {
      EXPECT_TRUE(torch::equal(sample_next(logits, SamplingOptions(o).temperature(t), g), best))
          << t;
      EXPECT_TRUE(torch::equal(
          sample_next(logits, SamplingOptions(o).temperature(t).top_p(1e-300), g), best))
          << t;
    }
    for (double p : {1e-30, 1e-300, 5e-324}) {
      EXPECT_TRUE(torch::equal(sample_next(logits, SamplingOptions(o).top_p(p), g), best)) << p;
    }
    // Logits far apart at temperature 2 still give a distribution.
    auto wide = torch::tensor({{3e38f, -3e38f, 0.0f}});
    EXPECT_EQ(sample_next(wide, SamplingOptions(o).temperature(2), g).item<int64_t>(), 0);
  }
}

TEST(Sampling, NonFiniteLogitsAreAnInputErrorNamingWhere) {
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(4);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    auto logits = torch::zeros({2, 5});
    logits[1][3] = bad;
    for (double t : {0.0, 1.0}) {
      try {
        sample_next(logits, SamplingOptions().temperature(t), g);
        ADD_FAILURE() << "no error for " << bad << " at temperature " << t;
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("NaN or infinity (first at [1, 3])"), std::string::npos)
            << e.what();
      }
    }
  }
}

// A model whose weights hold NaN: generate() throws the typed error, and
// the scheduler ends every request with kError and its message, and goes on
// serving a sound model's requests after it.
TEST(Scheduler, NaNWeightsEndEachRequestWithAnErrorNotTheProcess) {
  GPT broken = tiny_model();
  {
    torch::NoGradGuard no_grad;
    broken->transformer->wpe->weight[0][0] = std::numeric_limits<float>::quiet_NaN();
  }
  EXPECT_THROW(generate(*broken, {{1, 2}}, greedy(3)), InputError);
  EXPECT_THROW(generate(*broken, {{1, 2}}, SamplingOptions().max_new_tokens(3)), InputError);
  Scheduler scheduler(broken, /*max_batch=*/4);
  Endings end(3);
  std::mutex& m = end.m;
  const auto& why = end.why;
  std::vector<std::string> errors(3);
  for (int i = 0; i < 3; ++i) {
    GenerationRequest r;
    r.prompt = {1, 2, 3};
    r.options = SamplingOptions().temperature(i == 0 ? 0.0 : 1e-39).max_new_tokens(5);
    r.on_error = [&, i](const std::string& message) {
      std::lock_guard<std::mutex> lock(m);
      errors[i] = message;
    };
    r.on_finish = end.on_finish(i);
    scheduler.submit(std::move(r));
  }
  ASSERT_TRUE(end.wait());
  std::lock_guard<std::mutex> lock(m);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(*why[i], FinishReason::kError);
    EXPECT_NE(errors[i].find("NaN or infinity"), std::string::npos) << errors[i];
  }
  EXPECT_EQ(to_string(FinishReason::kError), "error");
}

// Callbacks that throw end their own request only: an on_token that throws
// ends with kError carrying its message; an on_finish that throws is
// dropped; a request beside them runs to its length.
TEST(Scheduler, ACallbackThatThrowsEndsItsOwnRequestOnly) {
  Scheduler scheduler(tiny_model(), /*max_batch=*/4);
  Endings end(3);
  std::mutex& m = end.m;
  const auto& why = end.why;
  std::string error;
  int64_t tokens = 0;
  for (int i = 0; i < 3; ++i) {
    GenerationRequest r;
    r.prompt = {1, 2, 3};
    r.options = greedy(6);
    r.on_token = [&, i](int64_t) -> bool {
      if (i == 0) throw std::runtime_error("the client's callback failed");
      std::lock_guard<std::mutex> lock(m);
      if (i == 2) ++tokens;
      return true;
    };
    r.on_error = [&](const std::string& message) {
      std::lock_guard<std::mutex> lock(m);
      error = message;
    };
    r.on_finish = [&end, i](FinishReason reason) {
      end.on_finish(i)(reason);
      if (i == 1) throw std::runtime_error("on_finish failed");
    };
    scheduler.submit(std::move(r));
  }
  ASSERT_TRUE(end.wait());
  std::lock_guard<std::mutex> lock(m);
  EXPECT_EQ(*why[0], FinishReason::kError);
  EXPECT_EQ(error, "the client's callback failed");
  EXPECT_EQ(*why[1], FinishReason::kLength);
  EXPECT_EQ(*why[2], FinishReason::kLength);
  EXPECT_EQ(tokens, 6);
}

}  // namespace
}  // namespace gpt2
