// The fused ops of LibTorch 2.x that gpt2 bench ops measures the library's
// kernels against: each equals what it stands for where the release has it,
// and is a named error where it does not.
#include <gtest/gtest.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gpt2/ops/torch_compat.h"

namespace gpt2 {
namespace {

TEST(TorchCompat, CausalSdpaIsTheExplicitCausalAttention) {
  torch::manual_seed(3);
  const auto q = torch::randn({2, 3, 7, 4}), k = torch::randn({2, 3, 7, 4}),
             v = torch::randn({2, 3, 7, 4});
  if (!compat::has_sdpa()) {
    try {
      compat::causal_sdpa(q, k, v);
      FAIL() << "causal_sdpa ran on LibTorch " << compat::torch_version();
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("needs LibTorch 2.0"), std::string::npos) << e.what();
    }
    return;
  }
  const auto mask = torch::ones({7, 7}, torch::kBool).triu(1);
  auto att = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(4.0);
  att = torch::softmax(att.masked_fill(mask, -std::numeric_limits<double>::infinity()), -1);
  EXPECT_TRUE(torch::allclose(compat::causal_sdpa(q, k, v), torch::matmul(att, v), 1e-5, 1e-6));
}

TEST(TorchCompat, FusedAdamwTakesAdamWsStep) {
  torch::manual_seed(4);
  const auto p = torch::randn({5, 6}), g = torch::randn({5, 6});
  const auto options = torch::optim::AdamWOptions(1e-2).betas({0.9, 0.95}).weight_decay(0.1);
  std::vector<torch::Tensor> params{p.clone()}, grads{g.clone()}, m{torch::zeros_like(p)},
      v{torch::zeros_like(p)}, steps{torch::zeros({})};
  if (!compat::has_fused_adamw()) {
    EXPECT_THROW(compat::fused_adamw(params, grads, m, v, steps, 1e-2, 0.9, 0.95, 0.1, 1e-8),
                 c10::Error);
    EXPECT_TRUE(torch::equal(params[0], p));
    return;
  }
  auto reference = p.clone().requires_grad_();
  reference.mutable_grad() = g.clone();
  torch::optim::AdamW adamw({reference}, options);
  for (int step = 0; step < 3; ++step) {
    adamw.step();
    steps[0].fill_(step + 1);  // this step's number, which the kernel reads
    compat::fused_adamw(params, grads, m, v, steps, 1e-2, 0.9, 0.95, 0.1, 1e-8);
  }
  EXPECT_EQ(steps[0].item<float>(), 3.0f);  // read, not counted up
  EXPECT_TRUE(torch::allclose(params[0], reference.detach(), 1e-6, 1e-7))
      << (params[0] - reference.detach()).abs().max().item<float>();
}

}  // namespace
}  // namespace gpt2
