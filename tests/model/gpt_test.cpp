#include "gpt2/model/gpt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <torch/types.h>
#include <torch/utils.h>

#include "gpt2/error.h"
#include "test_util.h"

namespace gpt2 {
namespace {

std::vector<std::string> keys_of(const torch::OrderedDict<std::string, torch::Tensor>& d) {
  return d.keys();
}

TEST(GPT, StateDictKeysAreNanoGPTsFor12Layers) {
  GPT model(GPTConfig::preset("gpt2").init(InitOptions().seed(0)));
  const auto want = testing::nanogpt_names(12);
  EXPECT_EQ(want.size(), 149u);
  EXPECT_EQ(keys_of(model->named_parameters()), want);
  EXPECT_TRUE(model->named_buffers().is_empty());
  EXPECT_EQ(model->num_parameters(), 124'439'808);
  EXPECT_EQ(model->num_parameters(/*non_embedding=*/true), 123'653'376);
}

TEST(GPT, Gpt2MediumHasItsPublishedParameterCount) {
  GPT model(GPTConfig::preset("gpt2-medium").init(InitOptions().seed(0)));
  EXPECT_EQ(model->num_parameters(), 354'823'168);
  EXPECT_EQ(model->num_parameters(), model->config.num_parameters());
}

TEST(GPT, NoBiasConfigDropsEveryBias) {
  GPT model(testing::tiny_config().bias(false));
  for (const auto& p : model->named_parameters()) {
    EXPECT_EQ(p.key().find(".bias"), std::string::npos) << p.key();
  }
  EXPECT_EQ(model->num_parameters(), model->config.num_parameters());
}

TEST(GPT, ForwardGivesLogitsAndMeanCrossEntropy) {
  torch::manual_seed(5);
  GPT model(testing::tiny_config());
  auto idx = torch::randint(96, {3, 10});
  auto targets = torch::randint(96, {3, 10});
  targets[1][4] = -1;  // ignored
  auto out = model(idx, targets);
  EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{3, 10, 96}));
  // Mean of -log softmax at the target, over the 29 non-ignored positions.
  auto logp = torch::log_softmax(out.logits, -1);
  double sum = 0;
  int count = 0;
  for (int b = 0; b < 3; ++b) {
    for (int t = 0; t < 10; ++t) {
      const int64_t y = targets[b][t].item<int64_t>();
      if (y == -1) continue;
      sum -= logp[b][t][y].item<double>();
      ++count;
    }
  }
  EXPECT_EQ(count, 29);
  EXPECT_NEAR(out.loss.item<double>(), sum / count, 1e-5);
  EXPECT_FALSE(model(idx).loss.defined());
}

TEST(GPT, ForwardLastEqualsLastRowOfForward) {
  torch::manual_seed(6);
  GPT model(testing::tiny_config());
  auto idx = torch::randint(96, {2, 7});
  torch::NoGradGuard no_grad;
  auto last = model->forward_last(idx);
  EXPECT_EQ(last.sizes(), (std::vector<int64_t>{2, 96}));
  EXPECT_TRUE(torch::allclose(last, model(idx).logits.select(1, 6), 1e-6, 1e-6));
}

TEST(GPT, AcceptsFullBlockAndRunsCausally) {
  torch::manual_seed(7);
  GPT model(testing::tiny_config());
  auto idx = torch::randint(96, {1, 16});
  auto changed = idx.clone();
  changed[0][15] = (idx[0][15].item<int64_t>() + 1) % 96;
  torch::NoGradGuard no_grad;
  auto a = model(idx).logits, b = model(changed).logits;
  EXPECT_TRUE(torch::equal(a.slice(1, 0, 15), b.slice(1, 0, 15)));
}

void expect_input_error(GPT& model, const torch::Tensor& idx, const std::string& fragment,
                        const torch::Tensor& targets = {}) {
  try {
    model(idx, targets);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(GPT, BadInputGetsTypedErrorsWithValues) {
  GPT model(testing::tiny_config());
  expect_input_error(model, torch::zeros({5}, torch::kLong),
                     "idx must be a 2-D (B, T) int64 tensor, got Long [5]");
  expect_input_error(model, torch::zeros({1, 5}), "got Float [1, 5]");
  expect_input_error(model, torch::zeros({1, 5}, torch::kLong).to_sparse(), "got Sparse Long [1, 5]");
  GPT half(testing::tiny_config());
  half->to(torch::kHalf);
  expect_input_error(half, torch::zeros({1, 5}, torch::kLong),
                     "the model's weights are float16, which runs on a GPU; on the CPU convert");
  expect_input_error(model, torch::zeros({1, 17}, torch::kLong),
                     "1 <= T <= block_size 16, got B 1 and T 17");
  expect_input_error(model, torch::zeros({1, 0}, torch::kLong), "got B 1 and T 0");
  auto idx = torch::zeros({2, 9}, torch::kLong);
  idx[1][7] = 300;
  expect_input_error(model, idx, "token id 300 at position (1, 7) is outside the vocabulary [0, 96)");
  idx[1][7] = -2;
  expect_input_error(model, idx, "token id -2 at position (1, 7)");
  auto ok = torch::zeros({2, 9}, torch::kLong);
  expect_input_error(model, ok, "targets must be int64 shaped like idx [2, 9], got Long [2, 8]",
                     torch::zeros({2, 8}, torch::kLong));
  auto targets = torch::zeros({2, 9}, torch::kLong);
  targets[0][3] = 96;
  expect_input_error(model, ok, "target 96 at position (0, 3)", targets);
  EXPECT_THROW(model->forward_last(torch::zeros({1, 17}, torch::kLong)), InputError);
  EXPECT_THROW(model->embed(torch::full({1, 3}, 96, torch::kLong)), InputError);
  // Another device than the model's (the meta device stands for a GPU here).
  expect_input_error(model, ok.to(torch::kMeta),
                     "idx is on meta but the model is on cpu: move it with .to(cpu)");
  expect_input_error(model, ok, "targets are on meta but idx on cpu", targets.to(torch::kMeta));
}

// Built unchecked, vocab_size -1 would make torch::empty throw c10::Error.
TEST(GPT, BadConfigThrowsConfigErrorBeforeBuilding) {
  EXPECT_THROW(GPT(testing::tiny_config().vocab_size(-1)), ConfigError);
  EXPECT_THROW(GPT(testing::tiny_config().n_embd(30).n_head(4)), ConfigError);
  // Valid, but 2^40 x 64 floats: named by its size, not by the allocator.
  EXPECT_EQ(testing::error_of<ConfigError>([] {
              GPT(GPTConfig().vocab_size(int64_t{1} << 40).block_size(16).n_layer(1).n_head(1)
                      .n_embd(64));
            }),
            "a model of 70368744228800 parameters (281475.0 GB as float32) cannot be allocated");
}

TEST(GPT, BlockAccessorIsTyped) {
  GPT model(testing::tiny_config());
  EXPECT_EQ(model->block(1).get(), model->transformer->h->ptr<BlockImpl>(1).get());
  EXPECT_TRUE(model->block(0)->mlp->c_proj->options.residual_scale());
}

}  // namespace
}  // namespace gpt2

namespace gpt2 {
namespace {

// Every target ignored: 0 terms over 0 positions. The library keeps
// PyTorch's answer (NaN) rather than inventing a 0; the README says so.
TEST(GPT, AllTargetsIgnoredGivesNaNLossAsPyTorchDoes) {
  GPT model(testing::tiny_config());
  auto idx = torch::zeros({2, 5}, torch::kLong);
  auto loss = model(idx, torch::full({2, 5}, -1, torch::kLong)).loss;
  EXPECT_TRUE(std::isnan(loss.item<double>()));
}

// nanoGPT's crop_block_size, as with_config does it for --init-from.
TEST(GPT, WithConfigCropsTheBlockKeepsTheTieAndGivesTheSameLogits) {
  torch::manual_seed(3);
  GPT model(testing::tiny_config());  // block 16
  GPT cropped = with_config(*model, GPTConfig(model->config).block_size(8).dropout(0.25));
  EXPECT_EQ(cropped->config.block_size(), 8);
  EXPECT_EQ(cropped->config.dropout(), 0.25);
  EXPECT_EQ(cropped->transformer->wpe->weight.size(0), 8);
  EXPECT_TRUE(torch::equal(cropped->transformer->wpe->weight,
                           model->transformer->wpe->weight.slice(0, 0, 8)));
  EXPECT_EQ(cropped->lm_head->weight.data_ptr(), cropped->transformer->wte->weight.data_ptr());
  EXPECT_NE(cropped->transformer->wte->weight.data_ptr(), model->transformer->wte->weight.data_ptr())
      << "a copy, not a view of the source";
  model->eval();
  cropped->eval();
  const auto idx = torch::randint(0, model->config.vocab_size(), {2, 8}, torch::kLong);
  EXPECT_TRUE(torch::equal(cropped->forward(idx).logits, model->forward(idx).logits));
  EXPECT_THROW(cropped->forward(torch::zeros({1, 9}, torch::kLong)), InputError);
}

TEST(GPT, WithConfigRefusesALongerBlockOrAnotherArchitecture) {
  GPT model(testing::tiny_config());
  EXPECT_EQ(testing::error_of<ConfigError>(
                [&] { with_config(*model, GPTConfig(model->config).block_size(17)); }),
            "block_size 17 is longer than the model's 16: wpe has 16 rows (a model can be "
            "cropped, not stretched)");
  EXPECT_EQ(testing::error_of<ConfigError>(
                [&] { with_config(*model, GPTConfig(model->config).n_layer(3)); }),
            "n_layer 3 differs from the model's 2: its weights have another shape or meaning");
  EXPECT_NO_THROW(with_config(*model, GPTConfig(model->config)));
}

}  // namespace
}  // namespace gpt2
