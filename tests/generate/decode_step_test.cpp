// Fixed-shape decoding steps (DecodeStep, BatchDecoder's kFixed), the step
// a CUDA graph captures, held on the CPU to the dynamic steps and to each
// sequence's plain forward alone: same logits, with rows that join and
// leave. The graph itself is checked on a GPU
// (tests/gpu/decode_graph_test.cpp).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/generate/batch_decoder.h"
#include "gpt2/generate/decode_step.h"
#include "gpt2/generate/generate.h"
#include "gpt2/generate/slot_cache.h"
#include "gpt2/model/gpt.h"
#include "test_util.h"

namespace gpt2 {
namespace {

GPT decode_model(int64_t block = 32) {
  GPT model(testing::tiny_config().block_size(block).init(InitOptions().seed(11)));
  model->eval();
  return model;
}

// Float32 products over 32 slots instead of the filled ones: the sums of
// masked (exactly zero) terms add nothing, but the kernels may order them
// otherwise, so the logits agree to a few float ulps of their ~1 size.
constexpr double kDecodeTol = 1e-5;

TEST(DecodeStep, DecodeStepFallsBackToEagerStepsOffCudaAndSaysWhy) {
  GPT model = decode_model();
  SlotCache fixed(model->config, 1, model->lm_head->weight.options());
  DecodeStep step(*model, fixed, /*graphed=*/true);
  EXPECT_FALSE(step.graphed());
  // A CUDA LibTorch's build names the device; a CPU-only one, the build.
  EXPECT_NE(step.why_not_graphed().find(cuda_graphs_built() ? "the model is on cpu" : "no CUDA"),
            std::string::npos) << step.why_not_graphed();
  EXPECT_EQ(step.captures(), 0);
  const auto want = model->forward_last(testing::id_rows({{3, 4}}));
  {
    torch::NoGradGuard no_grad;
    fixed.prefill(*model, testing::id_rows({{3}}), {0}, {1});
  }
  const auto got = step(testing::id_rows({{4}}));
  EXPECT_EQ(fixed.length(0), 1) << "a step leaves advancing to its caller";
  EXPECT_LT((got - want).abs().max().item<double>(), kDecodeTol);
  DecodeStep plain(*model, fixed, /*graphed=*/false);
  EXPECT_EQ(plain.why_not_graphed(), "");
}

// A decoder made for a number of slots makes its cache at once: one that
// cannot be allocated is an InputError naming the slots and gigabytes
// there, before any sequence (a server's scheduler fails as it starts).
TEST(DecodeStep, BatchDecoderMakesItsSlotsAtOnceOrSaysWhyNot) {
  GPT model = decode_model(40);
  const int64_t huge = int64_t{1} << 40;
  try {
    BatchDecoder decoder(*model, true, DecodeSteps::kFixed, huge);
    FAIL() << "a cache of 2^40 slots was made";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a KV cache of " + std::to_string(huge) + " slots ("),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(" GB) cannot be allocated"), std::string::npos) << e.what();
  }
  BatchDecoder fits(*model, true, DecodeSteps::kFixed, /*slots=*/2);
  fits.add({1, 2});
  const auto logits = fits.next_logits();
  const auto alone = model->forward_last(torch::tensor({int64_t{1}, int64_t{2}}).unsqueeze(0));
  EXPECT_LT((logits - alone).abs().max().item<double>(), kDecodeTol);
}

// Rows join (prefilled together into free slots) and leave (the last row
// moved into the hole), in the middle of the batch and between a step and
// its append, with 8 slots (the fixed steps run over 2, 4 and 8 of them)
// and with a cache that starts at 2 and grows; every step's logits equal
// each sequence's plain forward alone, and the two decoders'.
TEST(DecodeStep, BatchDecoderWithFixedStepsEqualsDynamicAsRowsJoinAndLeave) {
  GPT model = decode_model(40);
  BatchDecoder dynamic(*model, true, DecodeSteps::kDynamic);
  BatchDecoder fixed(*model, true, DecodeSteps::kFixed, /*slots=*/8);
  const std::vector<std::vector<int64_t>> prompts = {
      {1, 2, 3}, {4, 5, 6, 7, 8, 9}, {10}, {11, 12}, {13, 14, 15, 16}, {17}};
  for (BatchDecoder* d : {&dynamic, &fixed}) {
    d->add(prompts[0]);
    d->add(prompts[1]);
  }
  for (int step = 0; step < 16; ++step) {
    if (step == 3) {
      for (BatchDecoder* d : {&dynamic, &fixed}) d->add(prompts[2]);
    }
    if (step == 6) {
      for (BatchDecoder* d : {&dynamic, &fixed}) {
        for (const int p : {3, 4, 5}) d->add(prompts[p]);
      }
    }
    if (step == 9) {
      for (BatchDecoder* d : {&dynamic, &fixed}) d->remove(1);  // from the middle
    }
    if (step == 12) {
      const int64_t last = dynamic.ids().back();
      for (BatchDecoder* d : {&dynamic, &fixed}) d->remove(last);
    }
    const auto want = dynamic.next_logits(), got = fixed.next_logits();
    ASSERT_EQ(got.sizes(), want.sizes()) << "step " << step;
    EXPECT_LT((got - want).abs().max().item<double>(), kDecodeTol) << "step " << step;
    for (size_t r = 0; r < dynamic.ids().size(); ++r) {
      const auto tokens = torch::tensor(dynamic.tokens(dynamic.ids()[r]), torch::kLong).unsqueeze(0);
      EXPECT_LT((want[r] - model->forward_last(tokens)[0]).abs().max().item<double>(), kDecodeTol)
          << "step " << step << " row " << r;
    }
    if (step == 10) {  // a row that leaves between a step and its append
      const int64_t first = dynamic.ids()[0];
      for (BatchDecoder* d : {&dynamic, &fixed}) d->remove(first);
      const auto kept = want.narrow(0, 1, want.size(0) - 1);
      ASSERT_EQ(dynamic.ids(), fixed.ids());
      const auto next = kept.argmax(-1);
      const std::vector<int64_t> t(next.data_ptr<int64_t>(), next.data_ptr<int64_t>() + next.numel());
      std::vector<int64_t> tokens(t.size());
      // Row 0 left: the last row took its place, the rest kept theirs.
      for (size_t r = 0; r < t.size(); ++r) tokens[r] = t[r == 0 ? t.size() - 1 : r - 1];
      dynamic.append(tokens);
      fixed.append(tokens);
      continue;
    }
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
  GPT model = decode_model(12);
  for (const int64_t n : {1, 3}) {
    BatchDecoder dynamic(*model, true, DecodeSteps::kDynamic);
    BatchDecoder fixed(*model, true, DecodeSteps::kFixed);
    for (int64_t r = 0; r < n; ++r) {
      dynamic.add({5 + r, 6, 7});
      fixed.add({5 + r, 6, 7});
    }
    for (int step = 0; step < 20; ++step) {
      const auto want = dynamic.next_logits(), got = fixed.next_logits();
      EXPECT_LT((got - want).abs().max().item<double>(), kDecodeTol) << "step " << step;
      const auto next = want.argmax(-1);
      const std::vector<int64_t> t(next.data_ptr<int64_t>(), next.data_ptr<int64_t>() + n);
      dynamic.append(t);
      fixed.append(t);
    }
  }
}

TEST(DecodeStep, BadUseIsAnInputErrorNamingIt) {
  GPT model = decode_model();
  torch::NoGradGuard no_grad;
  SlotCache cache(model->config, 2, model->lm_head->weight.options());
  DecodeStep step(*model, cache, false);
  try {
    step(testing::id_rows({{1, 2}, {3, 4}}));
    ADD_FAILURE() << "a (2, 2) idx was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(rows, 1) int64 on cpu, got Long [2, 2] on cpu"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(step(testing::id_rows({{1}, {2}, {3}})), InputError) << "three rows for two slots";
  EXPECT_THROW(step(testing::id_rows({{1}}).to(torch::kInt)), InputError);
  std::vector<int64_t> full(32, 1);
  cache.prefill(*model, torch::tensor(full).unsqueeze(0), {0}, {32});
  try {
    step(testing::id_rows({{1}}));
    ADD_FAILURE() << "a full slot took a step";
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
  EXPECT_THROW(BatchDecoder(*model, true, DecodeSteps::kFixed, -1), InputError);
}

TEST(DecodeStep, GenerateAsksForGraphsOnlyOnCuda) {
  // On the CPU, cuda_graphs changes nothing: the same text either way.
  GPT model = decode_model();
  const auto options = SamplingOptions().temperature(0).max_new_tokens(12);
  EXPECT_EQ(generate(*model, {{1, 2, 3}, {4}}, SamplingOptions(options).cuda_graphs(true)),
            generate(*model, {{1, 2, 3}, {4}}, SamplingOptions(options).cuda_graphs(false)));
}

}  // namespace
}  // namespace gpt2
