// The tie: lm_head.weight and transformer.wte.weight are one tensor through
// construction, to(), clone(), save/load and backward.

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/serialize.h>


#include "gpt2/model/gpt.h"
#include "test_util.h"

namespace gpt2 {
namespace {

void expect_tied(GPTImpl& model) {
  const auto& head = model.lm_head->weight;
  const auto& wte = model.transformer->wte->weight;
  EXPECT_EQ(head.unsafeGetTensorImpl(), wte.unsafeGetTensorImpl());
  EXPECT_EQ(head.data_ptr(), wte.data_ptr());
  auto named = model.named_parameters();
  EXPECT_EQ(named["lm_head.weight"].data_ptr(), named["transformer.wte.weight"].data_ptr());
}

TEST(Tie, LmHeadIsSameTensorAsWteAfterConstruction) {
  GPT model(testing::tiny_config());
  expect_tied(*model);
  // parameters() lists the tied tensor under both names; the unique list once.
  EXPECT_EQ(model->parameters().size(), model->unique_parameters().size() + 1);
  auto unique = model->named_unique_parameters();
  EXPECT_TRUE(unique.contains("transformer.wte.weight"));
  EXPECT_FALSE(unique.contains("lm_head.weight"));
}

TEST(Tie, LmHeadIsSameTensorAsWteAfterToFloat64AndBack) {
  GPT model(testing::tiny_config());
  auto before = model->lm_head->weight.clone();
  model->to(torch::kFloat64);
  expect_tied(*model);
  EXPECT_EQ(model->transformer->wte->weight.scalar_type(), torch::kFloat64);
  model->to(torch::kFloat32);
  expect_tied(*model);
  EXPECT_TRUE(torch::equal(model->lm_head->weight, before));
}

TEST(Tie, CloneIsTiedAndIndependent) {
  torch::manual_seed(8);
  GPT model(testing::tiny_config());
  model->eval();
  model->transformer->wpe->weight.requires_grad_(false);  // frozen stays frozen
  auto copy = std::dynamic_pointer_cast<GPTImpl>(model->clone());
  ASSERT_TRUE(copy);
  expect_tied(*copy);
  EXPECT_FALSE(copy->is_training());
  EXPECT_FALSE(copy->transformer->wpe->weight.requires_grad());
  EXPECT_TRUE(copy->lm_head->weight.requires_grad());
  EXPECT_NE(copy->lm_head->weight.data_ptr(), model->lm_head->weight.data_ptr());
  auto src = model->named_parameters(), dst = copy->named_parameters();
  ASSERT_EQ(src.keys(), dst.keys());
  for (const auto& item : src) {
    EXPECT_TRUE(torch::equal(item.value(), dst[item.key()])) << item.key();
  }
  // The flag travels with the copy.
  EXPECT_TRUE(copy->block(1)->attn->c_proj->options.residual_scale());
  // Writes to the copy do not reach the original.
  {
    torch::NoGradGuard no_grad;
    copy->transformer->wte->weight.add_(1.0);
  }
  EXPECT_TRUE(torch::equal(copy->lm_head->weight, src["transformer.wte.weight"] + 1.0));
  EXPECT_FALSE(torch::equal(model->lm_head->weight, copy->lm_head->weight));
}

TEST(Tie, CloneToDeviceKeepsTie) {
  GPT model(testing::tiny_config());
  auto copy = std::dynamic_pointer_cast<GPTImpl>(model->clone(torch::Device(torch::kCPU)));
  expect_tied(*copy);
  EXPECT_TRUE(torch::equal(copy->lm_head->weight, model->lm_head->weight));
}

TEST(Tie, LmHeadIsSameTensorAsWteAfterSaveAndLoad) {
  testing::TempDir dir;
  const std::string path = dir / "tied.pt";
  GPT saved(testing::tiny_config().init(InitOptions().seed(1)));
  torch::save(saved, path);
  GPT loaded(testing::tiny_config().init(InitOptions().seed(2)));
  ASSERT_FALSE(torch::equal(loaded->lm_head->weight, saved->lm_head->weight));
  torch::load(loaded, path);
  expect_tied(*loaded);
  auto want = saved->named_parameters();
  for (const auto& item : loaded->named_parameters()) {
    EXPECT_TRUE(torch::equal(item.value(), want[item.key()])) << item.key();
  }
}

// The tied matrix's gradient must be the embedding's contribution plus the
// head's. The oracle runs the same model with two separate leaf copies of the
// matrix, one used as the embedding and one as the head.
TEST(Tie, GradientIsSumOfEmbeddingAndHeadContributions) {
  torch::manual_seed(9);
  GPT model(testing::tiny_config());
  auto idx = torch::randint(96, {2, 12});
  auto targets = torch::randint(96, {2, 12});
  model->forward(idx, targets).loss.backward();
  auto tied_grad = model->lm_head->weight.grad().clone();
  ASSERT_TRUE(model->transformer->wte->weight.grad().defined());

  auto as_embedding = model->lm_head->weight.detach().clone().requires_grad_(true);
  auto as_head = model->lm_head->weight.detach().clone().requires_grad_(true);
  auto pos = torch::arange(12);
  auto x = torch::embedding(as_embedding, idx) + model->transformer->wpe(pos);
  for (size_t i = 0; i < model->transformer->h->size(); ++i) x = model->block(i)(x);
  auto logits = torch::linear(model->transformer->ln_f(x), as_head);
  torch::nn::functional::cross_entropy(logits.view({-1, 96}), targets.view(-1)).backward();

  ASSERT_GT(as_embedding.grad().abs().sum().item<double>(), 0.0);
  ASSERT_GT(as_head.grad().abs().sum().item<double>(), 0.0);
  // float32, the same ops in the same order: agreement to ~1e-6 relative.
  EXPECT_TRUE(torch::allclose(tied_grad, as_embedding.grad() + as_head.grad(), 1e-5, 1e-7));
  EXPECT_FALSE(torch::allclose(tied_grad, as_head.grad(), 1e-5, 1e-7));
}

}  // namespace
}  // namespace gpt2
