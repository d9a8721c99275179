// Fixed-shape decoding steps (GPTImpl::forward_step, DecodeStep), the step
// a CUDA graph captures, held on the CPU to the plain cached forward: same
// logits, with padding, with rows that join and leave. The graph itself is
// checked on a GPU (tests/gpu/decode_graph_test.cpp).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/generate/batch_decoder.h"
#include "gpt2/generate/decode_step.h"
#include "gpt2/generate/generate.h"
#include "gpt2/model/gpt.h"
#include "test_util.h"

namespace gpt2 {
namespace {

GPT model_of(int64_t block = 32) {
  GPT model(testing::tiny_config().block_size(block).init(InitOptions().seed(11)));
  model->eval();
  return model;
}

torch::Tensor ids(std::vector<std::vector<int64_t>> rows) {
  std::vector<torch::Tensor> t;
  for (auto& r : rows) t.push_back(torch::tensor(r, torch::kLong));
  return torch::stack(t);
}

// Float32 products over 32 slots instead of the filled ones: the sums of
// masked (exactly zero) terms add nothing, but the kernels may order them
// otherwise, so the logits agree to a few float ulps of their ~1 size.
constexpr double kTol = 1e-5;

TEST(DecodeStep, FixedStepsEqualCachedForwardsWithPadding) {
  GPT model = model_of();
  torch::NoGradGuard no_grad;
  KVCache plain(model->config, 3, model->lm_head->weight.options());
  KVCache fixed(model->config, 3, model->lm_head->weight.options(), /*fixed_shapes=*/true);
  for (KVCache* c : {&plain, &fixed}) c->set_padding({2, 0, 1});
  const auto prompt = ids({{0, 0, 5, 9, 3}, {7, 1, 2, 8, 4}, {0, 6, 6, 1, 90}});
  const auto a0 = model->forward_cached(prompt, plain);
  const auto b0 = model->forward_cached(prompt, fixed);  // a prefill on a fixed cache is as ever
  EXPECT_TRUE(torch::allclose(a0, b0, 0, 0));
  torch::manual_seed(2);
  for (int step = 0; step < 20; ++step) {
    const auto next = torch::randint(96, {3, 1});
    const auto want = model->forward_cached(next, plain);
    fixed.sync_step();
    const auto got = model->forward_step(next, fixed);
    fixed.advance(1);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_LT((got - want).abs().max().item<double>(), kTol) << "step " << step;
  }
  EXPECT_EQ(fixed.length(), plain.length());
}

TEST(DecodeStep, AStepAfterAnEmptyPrefillStartsAtPositionZero) {
  GPT model = model_of();
  torch::NoGradGuard no_grad;
  KVCache fixed(model->config, 1, model->lm_head->weight.options(), true);
  const auto want = model->forward_last(ids({{42}}));
  fixed.sync_step();
  EXPECT_LT((model->forward_step(ids({{42}}), fixed) - want).abs().max().item<double>(), kTol);
  EXPECT_EQ(fixed.length(), 0) << "forward_step leaves advancing to its caller";
}

TEST(DecodeStep, DecodeStepFallsBackToEagerStepsOffCudaAndSaysWhy) {
  GPT model = model_of();
  KVCache fixed(model->config, 1, model->lm_head->weight.options(), true);
  DecodeStep step(*model, fixed, /*graphed=*/true);
  EXPECT_FALSE(step.graphed());
  // A CUDA LibTorch's build names the device; a CPU-only one, the build.
  EXPECT_NE(step.why_not_graphed().find(cuda_graphs_built() ? "the model is on cpu" : "no CUDA"),
            std::string::npos) << step.why_not_graphed();
  EXPECT_EQ(step.captures(), 0);
  const auto want = model->forward_last(ids({{3, 4}}));
  {
    torch::NoGradGuard no_grad;
    model->forward_cached(ids({{3}}), fixed);
  }
  const auto got = step(ids({{4}}));
  EXPECT_EQ(fixed.length(), 2);
  EXPECT_LT((got - want).abs().max().item<double>(), kTol);
  DecodeStep plain(*model, fixed, /*graphed=*/false);
  EXPECT_EQ(plain.why_not_graphed(), "");
}

// Rows that join (a spliced prefill, KVCache::append_rows) and leave
// (keep_rows) change the cache's layout; every step's logits still equal
// the dynamic decoder's.
TEST(DecodeStep, BatchDecoderWithFixedStepsEqualsDynamicAsRowsJoinAndLeave) {
  GPT model = model_of(40);
  BatchDecoder dynamic(*model, true, DecodeSteps::kDynamic);
  BatchDecoder fixed(*model, true, DecodeSteps::kFixed);
  const std::vector<std::vector<int64_t>> prompts = {{1, 2, 3}, {4, 5, 6, 7, 8, 9}, {10}, {11, 12}};
  for (BatchDecoder* d : {&dynamic, &fixed}) {
    d->add(prompts[0]);
    d->add(prompts[1]);
  }
  for (int step = 0; step < 14; ++step) {
    if (step == 3 || step == 6) {
      for (BatchDecoder* d : {&dynamic, &fixed}) d->add(prompts[step == 3 ? 2 : 3]);
    }
    if (step == 9) {
      for (BatchDecoder* d : {&dynamic, &fixed}) d->remove(1);
    }
    const auto want = dynamic.next_logits(), got = fixed.next_logits();
    ASSERT_EQ(got.sizes(), want.sizes()) << "step " << step;
    EXPECT_LT((got - want).abs().max().item<double>(), kTol) << "step " << step;
    const auto next = want.argmax(-1);
    const std::vector<int64_t> tokens(next.data_ptr<int64_t>(), next.data_ptr<int64_t>() + next.numel());
    dynamic.append(tokens);
    fixed.append(tokens);
  }
  EXPECT_EQ(fixed.ids(), dynamic.ids());
  EXPECT_FALSE(fixed.graphed());
}

// Past the block the decoder runs whole contexts again (positions shift);
// the fixed steps come back once a cache is rebuilt, with the same tokens.
TEST(DecodeStep, FixedStepsGiveGreedyTextOfDynamicStepsPastTheBlock) {
  GPT model = model_of(12);
  for (const int64_t n : {1, 3}) {
    BatchDecoder dynamic(*model, true, DecodeSteps::kDynamic);
    BatchDecoder fixed(*model, true, DecodeSteps::kFixed);
    for (int64_t r = 0; r < n; ++r) {
      dynamic.add({5 + r, 6, 7});
      fixed.add({5 + r, 6, 7});
    }
    for (int step = 0; step < 20; ++step) {
      const auto want = dynamic.next_logits(), got = fixed.next_logits();
      EXPECT_LT((got - want).abs().max().item<double>(), kTol) << "step " << step;
      const auto next = want.argmax(-1);
      const std::vector<int64_t> t(next.data_ptr<int64_t>(), next.data_ptr<int64_t>() + n);
      dynamic.append(t);
      fixed.append(t);
    }
  }
}

TEST(DecodeStep, BadUseIsAnInputErrorNamingIt) {
  GPT model = model_of();
  torch::NoGradGuard no_grad;
  KVCache plain(model->config, 2, model->lm_head->weight.options());
  EXPECT_THROW(model->forward_step(ids({{1}, {2}}), plain), InputError);
  EXPECT_THROW(plain.sync_step(), InputError);
  EXPECT_THROW(DecodeStep(*model, plain, false), InputError);
  KVCache fixed(model->config, 2, model->lm_head->weight.options(), true);
  fixed.sync_step();
  try {
    model->forward_step(ids({{1, 2}, {3, 4}}), fixed);
    ADD_FAILURE() << "a (2, 2) idx was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(2, 1) int64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(model->forward_step(ids({{1}}), fixed), InputError) << "one row for a cache of 2";
  fixed.advance(32);
  try {
    fixed.sync_step();
    ADD_FAILURE() << "a full cache took a step";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("32 positions, all filled"), std::string::npos)
        << e.what();
  }
  BatchDecoder decoder(*model, true, DecodeSteps::kFixed);
  decoder.add({1, 2});
  decoder.next_logits();
  EXPECT_THROW(decoder.append({96}), InputError);
  EXPECT_THROW(decoder.append({-1}), InputError);
  decoder.append({95});
  EXPECT_EQ(decoder.tokens(0), (std::vector<int64_t>{1, 2, 95}));
}

TEST(DecodeStep, LayoutChangesWhenTheStepsTensorsDo) {
  GPT model = model_of();
  KVCache a(model->config, 2, model->lm_head->weight.options(), true);
  KVCache b(model->config, 2, model->lm_head->weight.options(), true);
  EXPECT_NE(a.layout(), b.layout());
  const int64_t first = a.layout();
  a.advance(3);
  a.truncate(2);
  EXPECT_EQ(a.layout(), first) << "positions alone move no tensor";
  a.keep_rows({1});
  EXPECT_NE(a.layout(), first);
  const int64_t kept = a.layout();
  a.append_rows(b);
  EXPECT_NE(a.layout(), kept);
  EXPECT_EQ(a.batch(), 3);
}

TEST(DecodeStep, GenerateAsksForGraphsOnlyOnCuda) {
  // On the CPU, cuda_graphs changes nothing: the same text either way.
  GPT model = model_of();
  const auto options = SamplingOptions().temperature(0).max_new_tokens(12);
  EXPECT_EQ(generate(*model, {{1, 2, 3}, {4}}, SamplingOptions(options).cuda_graphs(true)),
            generate(*model, {{1, 2, 3}, {4}}, SamplingOptions(options).cuda_graphs(false)));
}

}  // namespace
}  // namespace gpt2
