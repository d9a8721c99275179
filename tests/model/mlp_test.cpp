#include "gpt2/model/modules.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>

#include "test_util.h"

namespace gpt2 {
namespace {

// GPT-2's gelu as written in OpenAI's model.py.
torch::Tensor gelu_tanh(const torch::Tensor& x) {
  return 0.5 * x * (1 + torch::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * torch::pow(x, 3))));
}

TEST(MLP, TanhGeluIsGPT2sFormulaAndExactIsErf) {
  torch::manual_seed(3);
  auto tanh_mlp = MLP(testing::tiny_config());
  auto exact_mlp = MLP(testing::tiny_config().gelu(Gelu::kExact));
  auto x = torch::randn({2, 5, 32});
  torch::NoGradGuard no_grad;
  auto want_tanh = tanh_mlp->c_proj(gelu_tanh(tanh_mlp->c_fc(x)));
  EXPECT_TRUE(torch::allclose(tanh_mlp(x), want_tanh, 1e-5, 1e-6));
  auto h = exact_mlp->c_fc(x);
  auto want_exact = exact_mlp->c_proj(0.5 * h * (1 + torch::erf(h / std::sqrt(2.0))));
  EXPECT_TRUE(torch::allclose(exact_mlp(x), want_exact, 1e-5, 1e-6));
  EXPECT_TRUE(tanh_mlp->c_proj->options.residual_scale());
  EXPECT_FALSE(tanh_mlp->c_fc->options.residual_scale());
}

TEST(Block, IsPreNormWithTwoResidualAdditions) {
  torch::manual_seed(4);
  auto block = Block(testing::tiny_config());
  auto x = torch::randn({2, 6, 32});
  torch::NoGradGuard no_grad;
  auto mid = x + block->attn(block->ln_1(x));
  auto want = mid + block->mlp(block->ln_2(mid));
  EXPECT_TRUE(torch::allclose(block(x), want, 1e-6, 1e-6));
}

}  // namespace
}  // namespace gpt2
