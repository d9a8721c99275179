#include "gpt2/model/modules.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>

#include "test_util.h"

namespace gpt2 {
namespace {

// Attention written the slow way, one head and one query position at a time.
torch::Tensor reference_attention(CausalSelfAttentionImpl& attn, const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  const int64_t nh = attn.config.n_head(), hs = C / nh;
  auto qkv = attn.c_attn(x);
  auto y = torch::zeros({B, T, C});
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < nh; ++h) {
      auto q = qkv[b].slice(1, h * hs, (h + 1) * hs);
      auto k = qkv[b].slice(1, C + h * hs, C + (h + 1) * hs);
      auto v = qkv[b].slice(1, 2 * C + h * hs, 2 * C + (h + 1) * hs);
      for (int64_t t = 0; t < T; ++t) {
        auto scores = torch::mv(k.slice(0, 0, t + 1), q[t]) / std::sqrt(double(hs));
        auto w = torch::softmax(scores, 0);                           // (t+1)
        y[b][t].slice(0, h * hs, (h + 1) * hs) = torch::mv(v.slice(0, 0, t + 1).t(), w);
      }
    }
  }
  return attn.c_proj(y);
}

TEST(Attention, MatchesPerHeadPerPositionReference) {
  torch::manual_seed(1);
  auto attn = CausalSelfAttention(testing::tiny_config());
  auto x = torch::randn({2, 9, 32});
  torch::NoGradGuard no_grad;
  auto got = attn(x);
  EXPECT_EQ(got.sizes(), x.sizes());
  // float32 sums over <= 32 terms: 1e-5 covers reordering.
  EXPECT_TRUE(torch::allclose(got, reference_attention(*attn, x), 1e-5, 1e-5));
}

TEST(Attention, FutureTokensDoNotChangeThePast) {
  torch::manual_seed(2);
  auto attn = CausalSelfAttention(testing::tiny_config());
  auto x = torch::randn({1, 8, 32});
  auto changed = x.clone();
  changed[0][5] = torch::randn({32});
  torch::NoGradGuard no_grad;
  auto a = attn(x), b = attn(changed);
  EXPECT_TRUE(torch::equal(a.slice(1, 0, 5), b.slice(1, 0, 5)));
  EXPECT_FALSE(torch::allclose(a.slice(1, 5), b.slice(1, 5)));
}

TEST(Attention, OnlyTheProjectionsAreParameters) {
  auto attn = CausalSelfAttention(testing::tiny_config());
  std::vector<std::string> keys;
  for (const auto& p : attn->named_parameters()) keys.push_back(p.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"c_attn.weight", "c_attn.bias", "c_proj.weight",
                                            "c_proj.bias"}));
  EXPECT_TRUE(attn->named_buffers().is_empty());
  EXPECT_TRUE(attn->c_proj->options.residual_scale());
  EXPECT_FALSE(attn->c_attn->options.residual_scale());
}

}  // namespace
}  // namespace gpt2
