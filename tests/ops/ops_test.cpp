// The seam the model calls (gpt2/ops/ops.h): each op on every path it can
// take (the CPU kernel, torch's float32 op, float64, a cache's longer keys,
// a padded mask) against an oracle in float64 written here, and the kernel
// taken where the model's tensors call for it.
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <cmath>
#include <limits>
#include <string>

#include "gpt2/ops/ops.h"
#include "gpt2/ops/settings.h"
#include "test_util.h"

namespace gpt2 {
namespace {

using testing::BackendScope;

// Attention written out in float64: softmax(q k^T / sqrt(hs), masked) v.
torch::Tensor attention_oracle(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& mask) {
  auto d = [](const torch::Tensor& t) { return t.to(torch::kDouble); };
  auto att = torch::matmul(d(q), d(k).transpose(-2, -1)) / std::sqrt(double(q.size(-1)));
  if (mask.defined()) att = att.masked_fill(mask, -std::numeric_limits<double>::infinity());
  return torch::matmul(torch::softmax(att, -1), d(v));
}

// q, k, v as the model makes them: the heads of one c_attn output (B, T, 3C).
struct Heads {
  torch::Tensor qkv, q, k, v;
};
Heads heads(int64_t B, int64_t T, int64_t nh, int64_t hs, bool grad) {
  const int64_t C = nh * hs;
  Heads h;
  // A product's output, as c_attn's is: a view of the (B*T, 3C) result.
  auto x = torch::randn({B * T, C}), w = torch::randn({3 * C, C}) / std::sqrt(double(C));
  if (grad) w.requires_grad_();
  h.qkv = ops::linear(x, w, {}).view({B, T, 3 * C});
  auto parts = h.qkv.split(C, 2);
  h.q = parts[0].view({B, T, nh, hs}).transpose(1, 2);
  h.k = parts[1].view({B, T, nh, hs}).transpose(1, 2);
  h.v = parts[2].view({B, T, nh, hs}).transpose(1, 2);
  return h;
}

torch::Tensor causal(int64_t T, int64_t past = 0) {
  return torch::ones({T, past + T}, torch::kBool).triu_(past + 1);
}

// Whether `t` came out of the CPU kernel's autograd function (through the
// views that give it the (B, nh, T, hs) shape).
bool from_the_kernel(const torch::Tensor& t) {
  auto node = t.grad_fn();
  for (int depth = 0; node && depth < 4; ++depth) {
    if (node->name().find("AttentionFunction") != std::string::npos) return true;
    node = node->next_edges().empty() ? nullptr : node->next_edges()[0].function;
  }
  return false;
}

// Float32 attention over T <= 32 keys: errors of a few 1e-7 relative; 1e-4
// is far above that and far below a wrong mask or head (an O(1) error).
void expect_near_oracle(const torch::Tensor& got, const torch::Tensor& want,
                        const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const double diff = (got.to(torch::kDouble) - want).abs().max().item<double>();
  EXPECT_LT(diff, 1e-4) << what;
}

// Without oneDNN in the build, the kernel is never taken.
TEST(OpsAttention, TheModelsHeadsTakeTheKernelWithAutogradAndMatchFloat64) {
  const Heads h = heads(2, 32, 4, 8, /*grad=*/true);
  const auto y = ops::attention(h.q, h.k, h.v, causal(32), 0.0);
  EXPECT_EQ(from_the_kernel(y), matmul_backend() == MatmulBackend::kOneDnn)
      << y.grad_fn()->name();
  expect_near_oracle(y, attention_oracle(h.q, h.k, h.v, causal(32)), "kernel");
}

TEST(OpsAttention, WithoutAutogradTheSamePathGivesTheSameNumbers) {
  torch::manual_seed(3);
  const Heads with = heads(2, 32, 4, 8, /*grad=*/true);
  const auto y = ops::attention(with.q, with.k, with.v, causal(32), 0.0).detach();
  torch::NoGradGuard no_grad;
  const auto again = ops::attention(with.q.detach(), with.k.detach(), with.v.detach(), causal(32), 0.0);
  EXPECT_TRUE(torch::equal(y, again)) << "no-grad attention took another path";
}

TEST(OpsAttention, TorchsPathsMatchFloat64) {
  // torch's float32 ops (the kTorch backend), float64, separate q k v
  // tensors, a cache's longer keys with a (T, S) mask and a padded
  // (B, 1, T, S) mask: none of them is the kernel's.
  const Heads h = heads(2, 8, 4, 8, /*grad=*/false);
  {
    BackendScope scope(MatmulBackend::kTorch);
    expect_near_oracle(ops::attention(h.q, h.k, h.v, causal(8), 0.0),
                       attention_oracle(h.q, h.k, h.v, causal(8)), "torch float32");
  }
  const auto q = torch::randn({2, 4, 3, 8}), k = torch::randn({2, 4, 11, 8}),
             v = torch::randn({2, 4, 11, 8});
  expect_near_oracle(ops::attention(q, k, v, causal(3, 8), 0.0),
                     attention_oracle(q, k, v, causal(3, 8)), "cached keys");
  auto qd = q.to(torch::kDouble), kd = k.to(torch::kDouble), vd = v.to(torch::kDouble);
  const auto y64 = ops::attention(qd, kd, vd, causal(3, 8), 0.0);
  EXPECT_EQ(y64.scalar_type(), torch::kDouble);
  EXPECT_LT((y64 - attention_oracle(q, k, v, causal(3, 8))).abs().max().item<double>(), 1e-12);
  auto padded = causal(3, 8).expand({2, 1, 3, 11}).clone();
  padded.select(0, 1).narrow(-1, 0, 2).fill_(true);  // row 1's first two keys are pads
  expect_near_oracle(ops::attention(q, k, v, padded, 0.0), attention_oracle(q, k, v, padded),
                     "padded mask");
  expect_near_oracle(ops::attention(q.narrow(2, 0, 1), k, v, {}, 0.0),
                     attention_oracle(q.narrow(2, 0, 1), k, v, {}), "one query, no mask");
}

// nanoGPT's is_causal=True: the model's path from position 0. The same
// numbers as the causal mask on every path (the kernel's heads, torch's
// float32, separate tensors), and refused where it cannot mean causal.
TEST(OpsAttention, IsCausalEqualsTheCausalMask) {
  const Heads h = heads(2, 16, 4, 8, /*grad=*/true);
  const auto y = ops::attention(h.q, h.k, h.v, {}, 0.0, /*is_causal=*/true);
  EXPECT_EQ(from_the_kernel(y), matmul_backend() == MatmulBackend::kOneDnn);
  EXPECT_TRUE(torch::equal(y, ops::attention(h.q, h.k, h.v, causal(16), 0.0)));
  expect_near_oracle(y, attention_oracle(h.q, h.k, h.v, causal(16)), "is_causal");
  const auto q = torch::randn({1, 2, 5, 8}), k = torch::randn({1, 2, 5, 8}), v = torch::randn({1, 2, 5, 8});
  EXPECT_TRUE(torch::equal(ops::attention(q, k, v, {}, 0.0, true), ops::attention(q, k, v, causal(5), 0.0)));
  EXPECT_TRUE(torch::equal(ops::causal_mask(5, 3, torch::kCPU), causal(5, 3)));
  EXPECT_FALSE(ops::causal_mask(1, 3, torch::kCPU).defined());
  const std::string longer = testing::error_of<InputError>(
      [&] { ops::attention(q, torch::randn({1, 2, 7, 8}), torch::randn({1, 2, 7, 8}), {}, 0.0, true); });
  EXPECT_NE(longer.find("got 7 keys for 5 queries"), std::string::npos) << longer;
  const std::string masked =
      testing::error_of<InputError>([&] { ops::attention(q, k, v, causal(5), 0.0, true); });
  EXPECT_NE(masked.find("and a mask"), std::string::npos) << masked;
}

// Under autocast the products are torch's, in bfloat16, on every path
// (the CPU kernels compute float32 and would ignore it); outside, float32.
TEST(OpsAutocast, ScopesSetAndRestoreAndTheSeamFollows) {
  const auto x = torch::randn({4, 16}), w = torch::randn({8, 16});
  EXPECT_FALSE(ops::autocast_enabled(torch::kCPU));
  {
    ops::Autocast plain(torch::kCPU, torch::kFloat);  // nanoGPT's float32: nothing
    EXPECT_FALSE(ops::autocast_enabled(torch::kCPU));
    EXPECT_EQ(ops::linear(x, w, {}).scalar_type(), torch::kFloat);
  }
  {
    ops::Autocast outer(torch::kCPU, torch::kBFloat16);
    EXPECT_TRUE(ops::autocast_enabled(torch::kCPU));
    EXPECT_FALSE(ops::autocast_enabled(torch::kCUDA));
    const auto y = ops::linear(x, w, {});
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    EXPECT_LT((y.to(torch::kFloat) - torch::linear(x, w)).abs().max().item<double>(),
              0.02 * torch::linear(x, w).abs().max().item<double>());
    {
      ops::Autocast inner(torch::kCPU, torch::kBFloat16);
    }
    EXPECT_TRUE(ops::autocast_enabled(torch::kCPU)) << "the inner scope ended the outer's";
  }
  EXPECT_FALSE(ops::autocast_enabled(torch::kCPU));
  EXPECT_EQ(ops::linear(x, w, {}).scalar_type(), torch::kFloat);
  const std::string half = testing::error_of<Error>([] { ops::Autocast a(torch::kCPU, torch::kHalf); });
  EXPECT_NE(half.find("on cpu"), std::string::npos) << half;
  EXPECT_FALSE(ops::autocast_enabled(torch::kCPU));
}

TEST(OpsAttention, DropoutOnlyWhenAsked) {
  const Heads h = heads(1, 8, 2, 8, /*grad=*/false);
  const auto none = ops::attention(h.q, h.k, h.v, causal(8), 0.0);
  EXPECT_TRUE(torch::equal(none, ops::attention(h.q, h.k, h.v, causal(8), 0.0)));
  EXPECT_FALSE(torch::equal(none, ops::attention(h.q, h.k, h.v, causal(8), 0.5)));
}

TEST(OpsLinear, EveryPathMatchesFloat64) {
  const auto x = torch::randn({5, 7, 16}), w = torch::randn({24, 16}), b = torch::randn({24});
  const auto want = torch::linear(x.to(torch::kDouble), w.to(torch::kDouble), b.to(torch::kDouble));
  for (MatmulBackend backend : {MatmulBackend::kTorch, MatmulBackend::kOneDnn}) {
    if (backend == MatmulBackend::kOneDnn && !onednn_available()) continue;
    BackendScope scope(backend);
    expect_near_oracle(ops::linear(x, w, b), want, to_string(backend));
  }
  const auto y64 = ops::linear(x.to(torch::kDouble), w.to(torch::kDouble), b.to(torch::kDouble));
  EXPECT_TRUE(torch::equal(y64, want));
}

TEST(OpsLinear, APackedWeightIsUsedOnlyWithoutAutogradAndFollowsTheWeight) {
  const auto x = torch::randn({3, 64}), b = torch::randn({32});
  auto w = torch::randn({32, 64});
  ops::PackedWeight packed;
  EXPECT_EQ(packed.bytes(w), 32 * 64 * 4);
  packed.set_format(WeightFormat::kBFloat16, w);
  EXPECT_EQ(packed.bytes(w), 32 * 64 * 2);
  {
    torch::NoGradGuard no_grad;
    const auto y = ops::linear(x, w, b, packed);
    EXPECT_FALSE(torch::equal(y, ops::linear(x, w, b)));  // bf16 rounding shows
    // bf16 keeps 8 bits: a relative step of 2^-8 on each weight, summed over 64.
    EXPECT_TRUE(torch::allclose(y, ops::linear(x, w, b), 0.05, 0.3));
    w.mul_(2);  // the weight changes: packed again at the next product
    EXPECT_TRUE(torch::allclose(ops::linear(x, w, b, packed), ops::linear(x, w, b), 0.05, 0.6));
  }
  EXPECT_TRUE(torch::equal(ops::linear(x, w, b, packed), ops::linear(x, w, b)));  // autograd on
  ops::PackedWeight copy = packed;
  EXPECT_EQ(copy.format(), WeightFormat::kBFloat16);
  EXPECT_EQ(copy.bytes(w), 32 * 64 * 4) << "a copy packs its own weight, at its first product";
}

TEST(OpsLoss, CrossEntropyMatchesFloat64OnEveryPath) {
  const auto logits = torch::randn({12, 40});
  auto targets = torch::randint(40, {12});
  targets[3] = -1;
  const auto keep = targets.ne(-1);
  const auto lp = torch::log_softmax(logits.to(torch::kDouble), -1);
  const auto want = -lp.index({keep}).gather(1, targets.index({keep}).unsqueeze(1)).mean();
  for (MatmulBackend backend : {MatmulBackend::kTorch, MatmulBackend::kOneDnn}) {
    if (backend == MatmulBackend::kOneDnn && !onednn_available()) continue;
    BackendScope scope(backend);
    EXPECT_NEAR(ops::cross_entropy(logits, targets).item<double>(), want.item<double>(), 1e-5)
        << to_string(backend);
  }
  EXPECT_NEAR(ops::cross_entropy(logits.to(torch::kDouble), targets).item<double>(),
              want.item<double>(), 1e-12);
}

TEST(OpsPointwise, LayerNormAndGeluMatchFloat64) {
  const auto x = torch::randn({4, 6, 32}), w = torch::randn({32}), b = torch::randn({32});
  auto d = [](const torch::Tensor& t) { return t.to(torch::kDouble); };
  const auto ln = torch::layer_norm(d(x), {32}, d(w), d(b), 1e-5);
  const auto gelu = torch::gelu(d(x), "tanh");
  for (bool grad : {false, true}) {
    auto xg = x.detach().requires_grad_(grad);
    expect_near_oracle(ops::layer_norm(xg, w, b, 1e-5), ln, "layer_norm");
    expect_near_oracle(ops::gelu(xg, "tanh"), gelu, "gelu");
  }
  EXPECT_TRUE(torch::equal(ops::gelu(d(x), "tanh"), gelu));
}

TEST(OpsEmbedding, TiedEmbeddingIsTheRowsOfTheWeight) {
  const auto w = torch::randn({50, 8});
  const auto idx = torch::randint(50, {3, 5});
  EXPECT_TRUE(torch::equal(ops::tied_embedding(idx, w), w.index({idx})));
  EXPECT_TRUE(torch::equal(ops::tied_embedding(idx, w.to(torch::kDouble)),
                           w.to(torch::kDouble).index({idx})));
}

}  // namespace
}  // namespace gpt2
