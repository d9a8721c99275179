#include "gpt2/train/optim.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "test_util.h"

namespace gpt2 {
namespace {

int64_t numel(const std::vector<torch::Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += t.numel();
  return n;
}

// nanoGPT's configure_optimizers prints, for gpt2 trained from scratch with
// its vocabulary padded to 50304: "num decayed parameter tensors: 50, with
// 124,354,560 parameters" and "num non-decayed parameter tensors: 98, with
// 121,344 parameters".
TEST(Optim, GroupsMatchNanoGPTForGpt2) {
  GPT model(GPTConfig::preset("gpt2").vocab_size(50304).init(InitOptions().seed(0)));
  ParamGroups groups = param_groups(*model);
  EXPECT_EQ(groups.decay.size(), 50u);
  EXPECT_EQ(numel(groups.decay), 124'354'560);
  EXPECT_EQ(groups.no_decay.size(), 98u);
  EXPECT_EQ(numel(groups.no_decay), 121'344);
  int tied = 0;
  for (const auto& t : groups.decay) tied += t.is_same(model->lm_head->weight);
  EXPECT_EQ(tied, 1);
}

// One AdamW step on the tied model moves the tied matrix exactly as one
// update of an untied copy given the summed gradient would.
TEST(Optim, AdamWStepMovesTiedMatrixOnce) {
  torch::manual_seed(10);
  GPT model(testing::tiny_config());
  const auto options = torch::optim::AdamWOptions(1e-2).betas({0.9, 0.95}).weight_decay(0.1);
  auto optimizer = configure_optimizers(*model, options);
  auto idx = torch::randint(96, {2, 8});
  model->forward(idx, idx).loss.backward();

  auto oracle = model->lm_head->weight.detach().clone().requires_grad_(true);
  oracle.mutable_grad() = model->lm_head->weight.grad().clone();
  torch::optim::AdamW single({oracle}, options);

  optimizer->step();
  single.step();
  EXPECT_TRUE(torch::equal(model->lm_head->weight, oracle));
  EXPECT_TRUE(model->lm_head->weight.is_same(model->transformer->wte->weight));
}

TEST(Optim, NoDecayGroupHasZeroWeightDecay) {
  GPT model(testing::tiny_config());
  auto optimizer = configure_optimizers(*model, torch::optim::AdamWOptions(1e-3).weight_decay(0.1));
  const auto& groups = optimizer->param_groups();
  ASSERT_EQ(groups.size(), 2u);
  auto decay = static_cast<const torch::optim::AdamWOptions&>(groups[0].options());
  auto none = static_cast<const torch::optim::AdamWOptions&>(groups[1].options());
  EXPECT_DOUBLE_EQ(decay.weight_decay(), 0.1);
  EXPECT_DOUBLE_EQ(none.weight_decay(), 0.0);
  EXPECT_EQ(groups[0].params().size() + groups[1].params().size(),
            model->unique_parameters().size());
}

}  // namespace
}  // namespace gpt2
