// The init, checked on the full gpt2 preset against expectations derived
// from parameter names (the tests' oracle; the library decides by flag).

#include "gpt2/model/init.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <unordered_map>

#include "gpt2/model/gpt.h"
#include "test_util.h"

namespace gpt2 {
namespace {

// Sample std of >= 589,824 draws has relative standard error 1/sqrt(2n) <=
// 0.1%, so a 1% tolerance is 10 standard errors: never flaky, yet a sqrt(2)
// or 2x scale mistake is far outside it.
constexpr double kRelTol = 0.01;

void expect_gpt2_init(const GPTConfig& config, double residual_std, double wpe_std) {
  GPT model(config);
  int residual = 0, linear = 0, biases = 0, norms = 0;
  for (const auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    const torch::Tensor& t = item.value();
    const double std = t.std().item<double>();
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
      EXPECT_EQ(t.abs().max().item<float>(), 0.0f) << name;
      ++biases;
    } else if (name.find("ln_") != std::string::npos) {
      EXPECT_TRUE(torch::equal(t, torch::ones_like(t))) << name;
      ++norms;
    } else if (testing::is_residual_projection(name)) {
      EXPECT_NEAR(std / residual_std, 1.0, kRelTol) << name << " std " << std;
      ++residual;
    } else if (name == "transformer.wpe.weight") {
      EXPECT_NEAR(std / wpe_std, 1.0, kRelTol) << name << " std " << std;
    } else {  // c_attn, c_fc, wte = lm_head
      EXPECT_NEAR(std / 0.02, 1.0, kRelTol) << name << " std " << std;
      ++linear;
    }
    // Means of the draws: standard error <= 0.02 / sqrt(589,824) = 2.6e-5.
    if (t.dim() >= 2) {
      EXPECT_NEAR(t.mean().item<double>(), 0.0, 1.5e-4) << name;
    }
  }
  EXPECT_EQ(residual, 24);
  EXPECT_EQ(linear, 2 * 12 + 2);  // c_attn, c_fc per block; wte and lm_head
  EXPECT_EQ(biases, 12 * 6 + 1);
  EXPECT_EQ(norms, 12 * 2 + 1);
}

TEST(Init, ResidualStdIs0p02OverSqrt2L) {
  expect_gpt2_init(GPTConfig::preset("gpt2").init(InitOptions().seed(1337)),
                   0.02 / std::sqrt(24.0), 0.02);
}

TEST(Init, OnePerBlockSchemeUsesSqrtLAndTfWpeStd) {
  auto init = InitOptions().seed(1).residual(ResidualScale::kOnePerBlock).wpe_std(0.01);
  expect_gpt2_init(GPTConfig::preset("gpt2").init(init), 0.02 / std::sqrt(12.0), 0.01);
}

TEST(Init, NoScalingSchemeGivesPlain0p02) {
  auto init = InitOptions().seed(2).residual(ResidualScale::kNone);
  expect_gpt2_init(GPTConfig::preset("gpt2").init(init), 0.02, 0.02);
}

// Zero init (modded-nanogpt, nanochat): the projections the flag marks are
// exactly +0, and every other tensor is bit for bit the one GPT-2's scheme
// draws from the same seed (the zero scheme draws and discards), so the
// schemes differ in the projections alone.
TEST(Init, ZeroSchemeStartsResidualProjectionsAtExactlyZeroAndDrawsTheRestAsGpt2) {
  const GPTConfig base = GPTConfig().n_layer(3).n_head(4).n_embd(64).vocab_size(96).block_size(16);
  GPT zero(GPTConfig(base).init(InitOptions().seed(11).residual(ResidualScale::kZero)));
  GPT gpt2(GPTConfig(base).init(InitOptions().seed(11)));
  auto theirs = gpt2->named_parameters();
  int projections = 0;
  for (const auto& item : zero->named_parameters()) {
    const torch::Tensor& t = item.value();
    if (testing::is_residual_projection(item.key())) {
      EXPECT_EQ(t.count_nonzero().item<int64_t>(), 0) << item.key();
      EXPECT_FALSE(t.signbit().any().item<bool>()) << item.key() << " holds -0";
      EXPECT_GT(theirs[item.key()].abs().max().item<float>(), 0.0f) << item.key();
      ++projections;
    } else {
      EXPECT_TRUE(torch::equal(t, theirs[item.key()])) << item.key();
    }
  }
  EXPECT_EQ(projections, 2 * 3);
  // The record says what was written: a fill of 0 (std 0).
  for (const auto& r : zero->reset_parameters()) {
    if (r.tensor.is_same(zero->block(2)->mlp->c_proj->weight)) {
      EXPECT_EQ(r.std, 0.0);
    }
  }
}

// Under the zero scheme too, the flag decides: a flagged c_attn starts at 0,
// an unflagged c_proj is drawn with the base std.
TEST(Init, ZeroSchemeFollowsTheFlag) {
  GPT model(GPTConfig().n_layer(2).n_head(4).n_embd(256).vocab_size(64).block_size(8)
                .init(InitOptions().seed(3).residual(ResidualScale::kZero)));
  auto block = model->block(0);
  block->attn->c_attn->options.residual_scale(true);
  block->attn->c_proj->options.residual_scale(false);
  init_weights(*model, model->config, model->transformer->wpe.get());
  EXPECT_EQ(block->attn->c_attn->weight.count_nonzero().item<int64_t>(), 0);
  // 65,536 draws: relative standard error 0.3%; 2% is 7 of them.
  EXPECT_NEAR(block->attn->c_proj->weight.std().item<double>() / 0.02, 1.0, 0.02);
  EXPECT_EQ(model->block(1)->mlp->c_proj->weight.count_nonzero().item<int64_t>(), 0);
}

TEST(Init, EveryTensorIsWrittenExactlyOnceTiedMatrixWithEmbeddingStd) {
  GPT model(testing::tiny_config().init(InitOptions().std(0.03)));
  auto records = model->reset_parameters();
  std::unordered_map<const c10::TensorImpl*, int> writes;
  for (const auto& r : records) ++writes[r.tensor.unsafeGetTensorImpl()];
  const auto unique = model->unique_parameters();
  EXPECT_EQ(records.size(), unique.size());
  for (const auto& p : unique) EXPECT_EQ(writes[p.unsafeGetTensorImpl()], 1);
  // Visiting order puts wte before lm_head: the tied matrix gets the
  // embedding's draw, once.
  const auto* tied = model->lm_head->weight.unsafeGetTensorImpl();
  for (const auto& r : records) {
    if (r.tensor.unsafeGetTensorImpl() == tied) {
      EXPECT_DOUBLE_EQ(r.std, 0.03);
      EXPECT_DOUBLE_EQ(r.mean, 0.0);
    }
  }
}

TEST(Init, SameSeedSameTensorsOtherSeedOthers) {
  auto config = testing::tiny_config();
  GPT a(config.init(InitOptions().seed(42)));
  GPT b(config.init(InitOptions().seed(42)));
  GPT c(config.init(InitOptions().seed(43)));
  auto pa = a->named_parameters(), pb = b->named_parameters(), pc = c->named_parameters();
  for (const auto& item : pa) EXPECT_TRUE(torch::equal(item.value(), pb[item.key()])) << item.key();
  EXPECT_FALSE(torch::equal(pa["transformer.h.0.attn.c_attn.weight"],
                            pc["transformer.h.0.attn.c_attn.weight"]));
}

// A seeded model is drawn from its own generator only: building, cloning it
// and re-initializing it leave torch's default generator where it was
// (module constructors draw nothing inside GPT; init_weights draws once).
TEST(Init, SeededModelLeavesTorchGeneratorAlone) {
  torch::manual_seed(0);
  const auto want = torch::rand({4});
  torch::manual_seed(0);
  GPT model(testing::tiny_config().init(InitOptions().seed(5)));
  model->clone();
  model->reset_parameters();
  EXPECT_TRUE(torch::equal(torch::rand({4}), want));
}

TEST(Init, DeferInitLeavesStandaloneModulesUnwrittenOnlyInsideItsScope) {
  torch::manual_seed(0);
  const auto want = torch::rand({4});
  torch::manual_seed(0);
  {
    DeferInit defer;
    Linear deferred(LinearOptions(256, 256));
    EXPECT_TRUE(DeferInit::active());
  }
  EXPECT_FALSE(DeferInit::active());
  EXPECT_TRUE(torch::equal(torch::rand({4}), want));
  // Outside the scope a Linear draws GPT-2's base init itself: 65,536 draws,
  // relative standard error 0.3%; 3% is ten of them.
  Linear standalone(LinearOptions(256, 256));
  EXPECT_NEAR(standalone->weight.std().item<double>() / 0.02, 1.0, 0.03);
  EXPECT_EQ(standalone->bias.abs().max().item<float>(), 0.0f);
}

TEST(Init, UnseededInitFollowsTorchManualSeed) {
  torch::manual_seed(7);
  GPT a(testing::tiny_config());
  torch::manual_seed(7);
  GPT b(testing::tiny_config());
  EXPECT_TRUE(torch::equal(a->lm_head->weight, b->lm_head->weight));
  EXPECT_TRUE(torch::equal(a->block(1)->mlp->c_proj->weight, b->block(1)->mlp->c_proj->weight));
}

// The decision is the flag's, not the name's: flag a c_attn and it is
// scaled; unflag a c_proj and it is not.
TEST(Init, FlagDecidesWhoIsScaled) {
  GPT model(GPTConfig().n_layer(8).n_head(4).n_embd(256).vocab_size(64).block_size(8)
                .init(InitOptions().seed(3)));
  auto block = model->block(0);
  block->attn->c_attn->options.residual_scale(true);
  block->attn->c_proj->options.residual_scale(false);
  init_weights(*model, model->config, model->transformer->wpe.get());
  const double scaled = 0.02 / std::sqrt(16.0);
  // 196,608 and 65,536 draws: relative standard error <= 0.3%; 2% is 7 of them.
  EXPECT_NEAR(block->attn->c_attn->weight.std().item<double>() / scaled, 1.0, 0.02);
  EXPECT_NEAR(block->attn->c_proj->weight.std().item<double>() / 0.02, 1.0, 0.02);
  EXPECT_NEAR(model->block(1)->attn->c_proj->weight.std().item<double>() / scaled, 1.0, 0.02);
}

}  // namespace
}  // namespace gpt2
