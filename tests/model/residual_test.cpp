// Why the residual scale exists: the residual stream is a sum of 2L
// contributions, so its variance grows with depth unless each write is
// scaled by 1/sqrt(2L).

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <iostream>

#include "gpt2/model/gpt.h"

namespace gpt2 {
namespace {

TEST(Residual, HundredUnitAdditionsGiveStdTenUnlessScaled) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0);
  const int n = 100;
  auto draws = at::normal(0.0, 1.0, {n, 100000}, gen);  // n additions, 1e5 samples
  const double unscaled = draws.sum(0).std().item<double>();
  const double scaled = (draws / std::sqrt(double(n))).sum(0).std().item<double>();
  // 1e5 samples: relative standard error 0.2%; 2% is ten of them.
  EXPECT_NEAR(unscaled, 10.0, 0.2);
  EXPECT_NEAR(scaled, 1.0, 0.02);
}

// std of the residual stream after the last block, at init.
double residual_stream_std(int64_t n_layer, ResidualScale scale) {
  GPT model(GPTConfig().n_layer(n_layer).n_head(4).n_embd(256).vocab_size(512)
                .block_size(64).init(InitOptions().seed(11).residual(scale)));
  model->eval();
  torch::NoGradGuard no_grad;
  auto idx = torch::randint(512, {8, 64}, at::make_generator<at::CPUGeneratorImpl>(5));
  auto x = model->embed(idx);
  for (size_t i = 0; i < model->transformer->h->size(); ++i) x = model->block(i)(x);
  return x.std().item<double>();
}

TEST(Residual, DefaultSchemeKeepsStreamStdFlatFrom12To48Layers) {
  const double scaled = residual_stream_std(48, ResidualScale::kTwoPerBlock) /
                        residual_stream_std(12, ResidualScale::kTwoPerBlock);
  const double unscaled = residual_stream_std(48, ResidualScale::kNone) /
                          residual_stream_std(12, ResidualScale::kNone);
  std::cout << "residual stream std, 48 layers / 12 layers: scaled " << scaled
            << ", unscaled " << unscaled << "\n";
  RecordProperty("ratio_scaled", std::to_string(scaled));
  RecordProperty("ratio_unscaled", std::to_string(unscaled));
  EXPECT_NEAR(scaled, 1.0, 0.25);
  // Unscaled, 4x the additions give about 2x the std.
  EXPECT_GT(unscaled, 1.6);
}

}  // namespace
}  // namespace gpt2
