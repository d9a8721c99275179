#include "gpt2/model/modules.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/nn/modules/normalization.h>

#include <sstream>


namespace gpt2 {
namespace {

std::string printed(const torch::nn::Module& m) {
  std::ostringstream out;
  m.pretty_print(out);
  return out.str();
}

TEST(Linear, ResidualFlagIsShownByPrettyPrint) {
  Linear plain(LinearOptions(4, 8));
  Linear residual(LinearOptions(8, 4).residual_scale(true));
  EXPECT_EQ(printed(*plain),
            "gpt2::Linear(in_features=4, out_features=8, bias=true, residual_scale=false)");
  EXPECT_EQ(printed(*residual),
            "gpt2::Linear(in_features=8, out_features=4, bias=true, residual_scale=true)");
}

TEST(Linear, CloneKeepsFlagAndCopiesTensors) {
  Linear residual(LinearOptions(8, 4).residual_scale(true));
  auto copy = std::dynamic_pointer_cast<LinearImpl>(residual->clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(copy->options.residual_scale());
  EXPECT_TRUE(torch::equal(copy->weight, residual->weight));
  EXPECT_NE(copy->weight.data_ptr(), residual->weight.data_ptr());
}

TEST(Linear, ForwardIsXWTransposePlusBias) {
  torch::manual_seed(0);
  Linear linear(LinearOptions(5, 3));
  {
    torch::NoGradGuard no_grad;
    linear->bias.uniform_(-1, 1);
  }
  auto x = torch::randn({2, 7, 5});
  auto want = torch::matmul(x, linear->weight.t()) + linear->bias;
  EXPECT_TRUE(torch::allclose(linear(x), want, 1e-6, 1e-6));
}

TEST(Linear, NoBiasRegistersOnlyWeight) {
  Linear linear(LinearOptions(5, 3).bias(false));
  EXPECT_EQ(linear->named_parameters().size(), 1u);
  EXPECT_FALSE(linear->bias.defined());
}

TEST(LayerNorm, MatchesTorchLayerNormAndDropsBiasOnRequest) {
  torch::manual_seed(0);
  LayerNorm norm(LayerNormOptions(6));
  torch::nn::LayerNorm reference(torch::nn::LayerNormOptions({6}));
  auto x = torch::randn({3, 6}) * 4 + 2;
  EXPECT_TRUE(torch::allclose(norm(x), reference(x), 1e-6, 1e-6));
  LayerNorm no_bias(LayerNormOptions(6).bias(false));
  EXPECT_EQ(no_bias->named_parameters().size(), 1u);
  EXPECT_EQ(printed(*no_bias), "gpt2::LayerNorm(6, eps=1e-05, bias=false)");
}

}  // namespace
}  // namespace gpt2
