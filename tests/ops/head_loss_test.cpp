// The head and the loss as one op (gpt2/ops/fused/head_loss.h, ops::head_loss,
// GPTImpl::loss) against the two ops it replaces, written out in float64:
// the loss and both gradients, over chunkings that split the rows unevenly,
// ignored targets, a padded and an unpadded vocabulary, bfloat16 autocast,
// and a tied model trained both ways.
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>
#include <torch/types.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/model/gpt.h"
#include "gpt2/ops/fused/head_loss.h"
#include "gpt2/ops/ops.h"
#include "gpt2/ops/settings.h"
#include "ops/head_loss_curves.h"
#include "test_util.h"

namespace gpt2 {
namespace {

namespace F = torch::nn::functional;

// Sets the process-wide head_loss_path() for one scope; the rule after.
class PathScope {
 public:
  explicit PathScope(HeadLossPath path) { set_head_loss_path(path); }
  ~PathScope() { set_head_loss_path(HeadLossPath::kAuto); }
  PathScope(const PathScope&) = delete;
  PathScope& operator=(const PathScope&) = delete;
};

bool fused_node(const torch::Tensor& loss) {
  return loss.grad_fn() && loss.grad_fn()->name().find("FusedHeadLoss") != std::string::npos;
}

struct HeadLossCase {
  torch::Tensor x, w, targets;
};

// N rows of width C over a vocabulary of V, about a third of the targets -1.
HeadLossCase make_case(int64_t N, int64_t C, int64_t V, torch::ScalarType dtype = torch::kFloat) {
  torch::manual_seed(N * 1000 + V);
  HeadLossCase c;
  c.x = torch::randn({N, C}, dtype).requires_grad_();
  c.w = (torch::randn({V, C}, dtype) / std::sqrt(double(C))).requires_grad_();
  c.targets = torch::randint(V, {N}, torch::kLong);
  c.targets.masked_fill_(torch::rand({N}) < 0.3, -1);
  return c;
}

struct Result {
  torch::Tensor loss, dx, dw;
};

// The two ops in float64: the oracle.
Result reference(const HeadLossCase& c) {
  auto x = c.x.detach().to(torch::kDouble).requires_grad_();
  auto w = c.w.detach().to(torch::kDouble).requires_grad_();
  auto loss = F::cross_entropy(torch::linear(x, w),
                               c.targets, F::CrossEntropyFuncOptions().ignore_index(-1));
  loss.backward();
  return {loss.detach(), x.grad(), w.grad()};
}

Result fused(const HeadLossCase& c, ops::HeadLossChunks chunks, double scale = 1.0) {
  auto x = c.x.detach().clone().requires_grad_();
  auto w = c.w.detach().clone().requires_grad_();
  auto loss = ops::fused_head_loss(x, w, c.targets, chunks);
  (loss * scale).backward();
  return {loss.detach(), x.grad(), w.grad()};
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

TEST(FusedHeadLoss, EqualsTheTwoOpsOverEveryChunking) {
  const HeadLossCase c = make_case(37, 16, 101);
  const Result want = reference(c);
  for (int64_t rows : {1, 5, 36, 37, 64, 0}) {
    for (int64_t pad_to : {1, 64}) {
      SCOPED_TRACE(::testing::Message() << "rows " << rows << ", pad_to " << pad_to);
      const Result got = fused(c, {rows, pad_to});
      EXPECT_EQ(got.loss.scalar_type(), torch::kFloat);
      EXPECT_LT(max_diff(got.loss, want.loss), 1e-5);
      EXPECT_LT(max_diff(got.dx, want.dx), 1e-6);
      EXPECT_LT(max_diff(got.dw, want.dw), 1e-6);
      EXPECT_EQ(got.dx.scalar_type(), torch::kFloat);
      EXPECT_EQ(got.dw.sizes(), c.w.sizes());
    }
  }
}

// A device's scorer (the ops seam gives the CUDA kernel's) scores every row
// at once in place of the chunks, by the contract HeadLossChunks::score
// states; this one keeps it with torch's ops. One that declines (an
// undefined result) leaves the chunks to run.
TEST(FusedHeadLoss, AScorerTakesEveryRowAtOnceOrLeavesItToTheChunks) {
  const HeadLossCase c = make_case(37, 16, 101);
  const Result want = reference(c);
  int calls = 0;
  ops::HeadLossChunks scored{0, 64};
  scored.score = [&](torch::Tensor& logits, const torch::Tensor& t, const torch::Tensor& factor,
                     int64_t V) {
    ++calls;
    EXPECT_EQ(logits.size(1), 128);  // padded
    const auto real = logits.narrow(1, 0, V).to(torch::kFloat);
    const auto at = t.clamp_min(0).unsqueeze(1);
    auto losses = (real.logsumexp(1) - real.gather(1, at).squeeze(1)).masked_fill(t.eq(-1), 0.0);
    if (factor.defined()) {
      auto g = torch::softmax(real, 1).scatter_add(1, at, torch::full({t.size(0), 1}, -1.0f));
      logits.narrow(1, 0, V).copy_(g.mul_(factor.unsqueeze(1)));
      logits.narrow(1, V, logits.size(1) - V).zero_();
    }
    return losses;
  };
  const Result got = fused(c, scored);
  EXPECT_EQ(calls, 1);
  EXPECT_LT(max_diff(got.loss, want.loss), 1e-5);
  EXPECT_LT(max_diff(got.dx, want.dx), 1e-6);
  EXPECT_LT(max_diff(got.dw, want.dw), 1e-6);
  ops::HeadLossChunks declines{5, 64};
  declines.score = [&](torch::Tensor&, const torch::Tensor&, const torch::Tensor&, int64_t) {
    ++calls;
    return torch::Tensor();
  };
  const Result chunked = fused(c, declines);
  EXPECT_EQ(calls, 2);
  EXPECT_LT(max_diff(chunked.loss, want.loss), 1e-5);
  EXPECT_LT(max_diff(chunked.dw, want.dw), 1e-6);
}

TEST(FusedHeadLoss, Float64StaysFloat64) {
  const HeadLossCase c = make_case(9, 8, 67, torch::kDouble);
  const Result want = reference(c), got = fused(c, {4, 64});
  EXPECT_LT(max_diff(got.loss, want.loss), 1e-12);
  EXPECT_LT(max_diff(got.dx, want.dx), 1e-12);
  EXPECT_LT(max_diff(got.dw, want.dw), 1e-12);
  EXPECT_EQ(got.dw.scalar_type(), torch::kDouble);
}

TEST(FusedHeadLoss, TheBackwardScalesByTheIncomingGradient) {
  const HeadLossCase c = make_case(20, 8, 50);
  const Result one = fused(c, {7, 64}), three = fused(c, {7, 64}, 3.0);
  EXPECT_LT(max_diff(three.dx, one.dx * 3), 1e-6);
  EXPECT_LT(max_diff(three.dw, one.dw * 3), 1e-6);
}

// A graph kept for a second backward gives the same gradients again.
TEST(FusedHeadLoss, ASecondBackwardGivesTheSameGradients) {
  const HeadLossCase c = make_case(10, 8, 30);
  auto x = c.x.detach().clone().requires_grad_();
  auto w = c.w.detach().clone().requires_grad_();
  auto loss = ops::fused_head_loss(x, w, c.targets, {4, 64}) * 2;
  loss.backward({}, /*retain_graph=*/true);
  const auto dx = x.grad().clone(), dw = w.grad().clone();
  x.grad().zero_();
  w.grad().zero_();
  loss.backward();
  EXPECT_TRUE(torch::equal(x.grad(), dx));
  EXPECT_TRUE(torch::equal(w.grad(), dw));
}

TEST(FusedHeadLoss, EveryTargetIgnoredIsNaNAsTorchsLoss) {
  HeadLossCase c = make_case(6, 8, 30);
  c.targets.fill_(-1);
  EXPECT_TRUE(std::isnan(reference(c).loss.item<double>()));
  EXPECT_TRUE(std::isnan(ops::fused_head_loss(c.x, c.w, c.targets).item<double>()));
}

TEST(FusedHeadLoss, WithoutGradModeItMakesNoGraph) {
  const HeadLossCase c = make_case(12, 8, 40);
  const Result want = reference(c);
  torch::NoGradGuard no_grad;
  auto loss = ops::fused_head_loss(c.x, c.w, c.targets, {5, 64});
  EXPECT_FALSE(loss.requires_grad());
  EXPECT_LT(max_diff(loss, want.loss), 1e-5);
}

TEST(FusedHeadLoss, BFloat16AutocastIsWithinItsRounding) {
  const HeadLossCase c = make_case(40, 32, 203);
  const Result want = reference(c);
  Result got;
  {
    ops::Autocast autocast(torch::kCPU, torch::kBFloat16);
    got = fused(c, {16, 64});
  }
  EXPECT_EQ(got.loss.scalar_type(), torch::kFloat);
  EXPECT_EQ(got.dw.scalar_type(), torch::kFloat);  // the parameter's, not the product's
  // Products of bfloat16 inputs (8 bits of mantissa) summed in float32.
  EXPECT_LT(max_diff(got.loss, want.loss) / want.loss.item<double>(), 1e-2);
  EXPECT_LT(max_diff(got.dx, want.dx), 2e-2 * want.dx.abs().max().item<double>());
  EXPECT_LT(max_diff(got.dw, want.dw), 2e-2 * want.dw.abs().max().item<double>());
}

TEST(FusedHeadLoss, BadShapesAreInputErrors) {
  const HeadLossCase c = make_case(4, 8, 10);
  EXPECT_THROW(ops::fused_head_loss(c.x, c.w.t(), c.targets), InputError);
  EXPECT_THROW(ops::fused_head_loss(c.x, c.w, c.targets.narrow(0, 0, 3)), InputError);
  EXPECT_THROW(ops::fused_head_loss(c.x, c.w, c.targets.to(torch::kInt)), InputError);
  EXPECT_THROW(ops::fused_head_loss(c.x, c.w, c.targets, {-1, 64}), InputError);
  EXPECT_THROW(ops::fused_head_loss(c.x, c.w, c.targets, {0, 0}), InputError);
}

TEST(HeadLossPath, TheRuleFusesOffTheCpuAndTheSettingForcesEither) {
  const HeadLossCase c = make_case(8, 8, 20);
  EXPECT_EQ(head_loss_path(), HeadLossPath::kAuto);
  EXPECT_FALSE(fused_node(ops::head_loss(c.x, c.w, c.targets)));  // the CPU: two ops
  {
    PathScope fused(HeadLossPath::kFused);
    EXPECT_TRUE(fused_node(ops::head_loss(c.x, c.w, c.targets)));
  }
  {
    PathScope two(HeadLossPath::kTwoOps);
    ops::Autocast autocast(torch::kCPU, torch::kBFloat16);
    EXPECT_FALSE(fused_node(ops::head_loss(c.x, c.w, c.targets)));
  }
  EXPECT_EQ(enum_name(HeadLossPath::kTwoOps), "two-ops");
}

// GPTImpl::loss through the fused head: the same value and gradients as
// forward's loss through the two ops, the tied matrix's gradient included.
void expect_loss_as_forward(bool autocast, double tolerance) {
  PathScope path(HeadLossPath::kFused);
  torch::manual_seed(3);
  GPT model(testing::tiny_config());
  auto idx = torch::randint(96, {3, 16}, torch::kLong);
  auto targets = torch::randint(96, {3, 16}, torch::kLong);
  targets.index_put_({0, 2}, -1);
  std::vector<torch::Tensor> grads;
  torch::Tensor want;
  for (bool fused : {false, true}) {
    model->zero_grad();
    torch::Tensor loss;
    {
      ops::Autocast scope(torch::kCPU, autocast ? torch::kBFloat16 : torch::kFloat);
      loss = fused ? model->loss(idx, targets) : model(idx, targets).loss;
    }
    EXPECT_EQ(fused_node(loss), fused);
    loss.backward();
    if (!fused) {
      want = loss.detach();
      for (const auto& p : model->unique_parameters()) grads.push_back(p.grad().clone());
      continue;
    }
    EXPECT_LT(max_diff(loss, want), tolerance * want.item<double>());
    size_t i = 0;
    for (const auto& item : model->named_unique_parameters()) {
      const auto& g = grads[i++];
      EXPECT_LT(max_diff(item.value().grad(), g), tolerance * g.abs().max().item<double>() + 1e-7)
          << item.key();
    }
  }
  EXPECT_EQ(model->lm_head->weight.grad().data_ptr(),
            model->transformer->wte->weight.grad().data_ptr());
}

TEST(ModelLoss, EqualsForwardsLossFusedInFloat32) { expect_loss_as_forward(false, 1e-5); }

TEST(ModelLoss, EqualsForwardsLossFusedUnderBFloat16Autocast) {
  expect_loss_as_forward(true, 3e-2);
}

TEST(ModelLoss, ChecksItsInputs) {
  GPT model(testing::tiny_config());
  auto idx = torch::randint(96, {2, 8}, torch::kLong);
  EXPECT_THROW(model->loss(idx, {}), InputError);
  EXPECT_THROW(model->loss(idx, torch::full({2, 8}, 96, torch::kLong)), InputError);
  EXPECT_THROW(model->loss(idx, torch::zeros({2, 7}, torch::kLong)), InputError);
}

// Training through the fused head follows training through the logits:
// the same 40 steps under bfloat16 autocast part only by bf16 rounding.
TEST(ModelLoss, TrainsAsForwardUnderBFloat16Autocast) {
  PathScope path(HeadLossPath::kFused);
  const GPTConfig config = testing::tiny_config();
  const auto fused = testing::loss_curve(config, torch::kCPU, torch::kBFloat16, 40, 4, false);
  const auto plain = testing::loss_curve(config, torch::kCPU, torch::kBFloat16, 40, 4, true);
  EXPECT_LT(fused.back(), fused.front() - 0.5) << "the model did not learn the counting";
  testing::expect_curves_agree(fused, plain);
}

}  // namespace
}  // namespace gpt2
