#include "gpt2/train/optim.h"

#include <gtest/gtest.h>
#include <ATen/Parallel.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/serialize/archive.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "gpt2/error.h"
#include "gpt2/ops/torch_compat.h"
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
  // One update moves each element by about lr = 1e-2 (Adam's first step is
  // lr times the gradient's sign), a second one as much again; torch's
  // fused kernel (2.4+) and its ops round differently, by a few ulps of
  // weights near 0.02 (1e-9): 1e-6 tells one update from two.
  EXPECT_TRUE(torch::allclose(model->lm_head->weight, oracle, 0, 1e-6))
      << (model->lm_head->weight - oracle).abs().max().item<double>();
  EXPECT_TRUE(model->lm_head->weight.is_same(model->transformer->wte->weight));
}

// Options torch's AdamW would refuse in its own words, or take (NaN), are
// refused naming the option.
TEST(Optim, ConfigureOptimizersRefusesBadOptionsNamingThem) {
  GPT model(testing::tiny_config());
  auto message = [&](const torch::optim::AdamWOptions& o) {
    return testing::error_of<InputError>([&] { configure_optimizers(*model, o); });
  };
  EXPECT_EQ(message(torch::optim::AdamWOptions(-1)),
            "configure_optimizers: AdamW's lr must be >= 0, got -1");
  EXPECT_EQ(message(torch::optim::AdamWOptions(1e-3).betas({0.9, 1.0})),
            "configure_optimizers: AdamW's beta2 must be in [0, 1), got 1");
  EXPECT_EQ(message(torch::optim::AdamWOptions(1e-3).weight_decay(std::nan(""))),
            "configure_optimizers: AdamW's weight_decay must be >= 0, got nan");
  EXPECT_EQ(message(torch::optim::AdamWOptions(1e-3)), "no error");
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

// The same groups as configure_optimizers, stepped by torch's own AdamW.
std::unique_ptr<torch::optim::AdamW> torch_adamw(const GPTImpl& model,
                                                 const torch::optim::AdamWOptions& options) {
  ParamGroups groups = param_groups(model);
  std::vector<torch::optim::OptimizerParamGroup> g;
  g.emplace_back(groups.decay, std::make_unique<torch::optim::AdamWOptions>(options));
  auto none = std::make_unique<torch::optim::AdamWOptions>(options);
  none->weight_decay(0.0);
  g.emplace_back(groups.no_decay, std::move(none));
  return std::make_unique<torch::optim::AdamW>(std::move(g), options);
}

void set_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
}

// Largest |a - b| over the two models' parameters, in the same order.
double max_param_diff(const GPTImpl& a, const GPTImpl& b) {
  const auto pa = a.unique_parameters(), pb = b.unique_parameters();
  double d = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    d = std::max(d, (pa[i] - pb[i]).abs().max().item<double>());
  }
  return d;
}

// Ten steps at a changing rate from the same weights, each step giving both
// the same gradients (the fused model's, from a real loss; were each model
// to compute its own, Adam would amplify the rounding noise of near-zero
// gradients to a sign flip and compare nothing): the fused step and torch's
// stay together. Both compute in float in the same order, so the only
// differences are contractions the compiler makes inside torch's vectorized
// kernels; 1e-6 on weights of order 0.02-1 is a few float ulps, where a
// wrong term (a missing bias correction, the decay on the wrong group, eps
// inside the square root) moves weights by 1e-4 or more.
TEST(Optim, FusedAdamWMatchesTorchOverTenSteps) {
  const auto options = torch::optim::AdamWOptions(1e-2).betas({0.9, 0.95}).weight_decay(0.1);
  GPT fused_model(testing::tiny_config().init(InitOptions().seed(3)));
  GPT torch_model(testing::tiny_config().init(InitOptions().seed(3)));
  auto fused = configure_optimizers(*fused_model, options);
  auto reference = torch_adamw(*torch_model, options);
  const auto fused_params = fused_model->unique_parameters();
  const auto torch_params = torch_model->unique_parameters();
  torch::manual_seed(4);
  for (int step = 0; step < 10; ++step) {
    const double lr = 1e-2 * (1.0 - 0.08 * step);
    set_lr(*fused, lr);
    set_lr(*reference, lr);
    auto idx = torch::randint(96, {2, 16});
    fused->zero_grad();
    fused_model->forward(idx, idx).loss.backward();
    for (size_t i = 0; i < fused_params.size(); ++i) {
      torch_params[i].mutable_grad() = fused_params[i].grad().clone();
    }
    fused->step();
    reference->step();
  }
  EXPECT_LT(max_param_diff(*fused_model, *torch_model), 1e-6);
  EXPECT_GT(max_param_diff(*fused_model, *GPT(testing::tiny_config().init(InitOptions().seed(3)))),
            1e-3);  // it did train
  EXPECT_TRUE(fused_model->lm_head->weight.is_same(fused_model->transformer->wte->weight));
}

// A tensor longer than one task, stepped on two threads: every chunk lands
// at its own offset.
TEST(Optim, FusedAdamWSplitsLargeTensorsAcrossThreads) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  torch::manual_seed(5);
  auto a = torch::randn({1000, 257}).requires_grad_(true);
  auto b = a.detach().clone().requires_grad_(true);
  const auto start = a.detach().clone();
  const auto options = torch::optim::AdamWOptions(1e-3).weight_decay(0.1);
  FusedAdamW fused({a}, options);
  torch::optim::AdamW reference({b}, options);
  for (int step = 0; step < 3; ++step) {
    auto g = torch::randn({1000, 257});
    a.mutable_grad() = g.clone();
    b.mutable_grad() = g.clone();
    fused.step();
    reference.step();
  }
  at::set_num_threads(threads);
  EXPECT_LT((a - b).abs().max().item<double>(), 1e-6);
  EXPECT_GT((a - start).abs().mean().item<double>(), 5e-4);  // three steps of about lr
}

// A tensor without a gradient is not stepped and its count stays behind,
// so the next step's tensors are at different steps: each one's bias
// correction is its own count's, as torch's AdamW makes it.
TEST(Optim, FusedAdamWCountsEachTensorsSteps) {
  torch::manual_seed(6);
  const auto start = torch::randn({3, 40});
  std::vector<torch::Tensor> a, b;
  for (int i = 0; i < 3; ++i) {
    a.push_back(start[i].clone().requires_grad_(true));
    b.push_back(start[i].clone().requires_grad_(true));
  }
  const auto options = torch::optim::AdamWOptions(1e-2).weight_decay(0.1);
  FusedAdamW fused(a, options);
  torch::optim::AdamW reference(b, options);
  for (int step = 0; step < 4; ++step) {
    for (int i = 0; i < 3; ++i) {
      const bool skip = i < 2 - step;  // tensor 0 joins at step 2, tensor 1 at step 1
      const auto g = torch::randn({40});
      a[i].mutable_grad() = skip ? torch::Tensor() : g.clone();
      b[i].mutable_grad() = skip ? torch::Tensor() : g.clone();
    }
    fused.step();
    reference.step();
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_LT((a[i] - b[i]).abs().max().item<double>(), 1e-6) << "tensor " << i;
    const auto& state = static_cast<torch::optim::AdamWParamState&>(
        *fused.state().at(compat::optimizer_state_key(a[i])));
    EXPECT_EQ(state.step(), 2 + i) << "tensor " << i;
  }
  // it did train: tensor 0 moved by about lr in each of its two steps
  EXPECT_GT((a[0] - start[0]).abs().max().item<double>(), 5e-3);
}

// The state is torch's: saved from the fused optimizer, loaded into torch's
// AdamW, the next step agrees; amsgrad falls back to torch's step exactly.
TEST(Optim, FusedAdamWStateIsTorchsAndAmsgradFallsBack) {
  torch::manual_seed(6);
  auto a = torch::randn({64}).requires_grad_(true);
  auto b = a.detach().clone().requires_grad_(true);
  FusedAdamW fused({a}, torch::optim::AdamWOptions(1e-2));
  a.mutable_grad() = torch::randn({64});
  fused.step();
  torch::serialize::OutputArchive out;
  fused.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  b.data().copy_(a.detach());
  torch::optim::AdamW reference({b}, torch::optim::AdamWOptions(1e-2));
  torch::serialize::InputArchive in;
  std::istringstream source(bytes.str());
  in.load_from(source);
  reference.load(in);
  const auto g = torch::randn({64});
  a.mutable_grad() = g.clone();
  b.mutable_grad() = g.clone();
  fused.step();
  reference.step();
  EXPECT_LT((a - b).abs().max().item<double>(), 1e-7);

  auto c = a.detach().clone().requires_grad_(true), d = a.detach().clone().requires_grad_(true);
  FusedAdamW ams({c}, torch::optim::AdamWOptions(1e-2).amsgrad(true));
  torch::optim::AdamW ams_reference({d}, torch::optim::AdamWOptions(1e-2).amsgrad(true));
  c.mutable_grad() = g.clone();
  d.mutable_grad() = g.clone();
  ams.step();
  ams_reference.step();
  EXPECT_TRUE(torch::equal(c, d));
}

// clip_grad_norm folds torch's clip_grad_norm_ into the next step: the same
// norm, the gradients untouched until the step, and the same weights over
// three steps (to the bit on the library's pass and on torch's unfused step,
// which amsgrad takes, given the gradients scaled first; to float rounding
// on torch's fused kernel); with an infinite bound, no clip.
TEST(Optim, ClipGradNormInTheStepEqualsTorchsClipThenStep) {
  for (const bool amsgrad : {false, true}) {
    for (const double max_norm : {0.05, std::numeric_limits<double>::infinity()}) {
      const auto options = torch::optim::AdamWOptions(1e-2).betas({0.9, 0.95}).weight_decay(0.1)
                               .amsgrad(amsgrad);
      GPT a(testing::tiny_config().init(InitOptions().seed(5)));
      GPT b(testing::tiny_config().init(InitOptions().seed(5)));
      auto oa = configure_optimizers(*a, options), ob = configure_optimizers(*b, options);
      const auto pa = a->unique_parameters(), pb = b->unique_parameters();
      for (int step = 0; step < 3; ++step) {
        const std::string at = "amsgrad " + std::to_string(amsgrad) + " max_norm " +
                               std::to_string(max_norm) + " step " + std::to_string(step);
        const auto idx = torch::randint(96, {2, 8});
        oa->zero_grad();
        ob->zero_grad();
        torch::manual_seed(step);
        a->forward(idx, idx).loss.backward();
        torch::manual_seed(step);
        b->forward(idx, idx).loss.backward();
        const double want = torch::nn::utils::clip_grad_norm_(pa, max_norm);
        if (std::isfinite(max_norm)) {
          EXPECT_GT(want, max_norm) << at;  // the clip scales
        }
        // torch's fused kernel (2.4 and later) divides by 1/factor where the
        // library's multiplies: equal to float rounding, and it stores the
        // clipped gradient as torch's clip does. The library's pass reads
        // the gradient without writing it and equals the clip to the bit.
        const bool torchs_kernel = compat::has_fused_adamw() && !amsgrad;
        const auto grad = pb[0].grad().clone();
        const double norm = ob->clip_grad_norm(pb, max_norm);
        if (torchs_kernel && step > 0) {
          // After a step of torch's kernel the two models' weights are a
          // few ulps apart (below), so their gradients' norms are too: 1e-6
          // relative is 8 to 16 float32 ulps; on an AMD EPYC (Zen 3) with
          // torch 2.6 the norm moved by 1 at step 2.
          EXPECT_NEAR(norm, want, 1e-6 * want) << at;
        } else {
          EXPECT_EQ(norm, want) << at;
        }
        EXPECT_TRUE(torch::equal(pb[0].grad(), grad)) << at;
        oa->step();
        ob->step();
        if (!amsgrad && !torchs_kernel) {
          EXPECT_TRUE(torch::equal(pb[0].grad(), grad)) << at;  // read, not written
        }
        for (size_t i = 0; i < pa.size(); ++i) {
          if (torchs_kernel) {
            EXPECT_TRUE(torch::allclose(pa[i], pb[i], 0, 1e-6)) << at << " parameter " << i;
            if (step == 0) {  // later steps start from weights a few ulps apart
              EXPECT_TRUE(torch::allclose(pa[i].grad(), pb[i].grad(), 1e-6, 0)) << at;
            }
          } else {
            EXPECT_TRUE(torch::equal(pa[i], pb[i])) << at << " parameter " << i;
          }
        }
      }
    }
  }
}

// The factor scales every gradient of the optimizer, so the list must be its
// parameters, each once, and the bound positive: anything else is refused by
// name before any norm.
TEST(Optim, ClipGradNormRefusesAListThatIsNotTheOptimizers) {
  GPT model(testing::tiny_config().init(InitOptions().seed(5)));
  GPT other(testing::tiny_config().init(InitOptions().seed(5)));
  auto optimizer = configure_optimizers(*model, torch::optim::AdamWOptions(1e-3));
  auto params = model->unique_parameters();
  const auto expect_refused = [&](const std::vector<torch::Tensor>& list, const char* says) {
    try {
      optimizer->clip_grad_norm(list, 1.0);
      ADD_FAILURE() << "accepted a list that " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  auto twice = params;
  twice.push_back(params[0]);
  expect_refused(twice, "listed twice");
  auto foreign = params;
  foreign[3] = other->unique_parameters()[3];
  expect_refused(foreign, "parameter 3 of");
  expect_refused(foreign, "not this optimizer's");
  expect_refused({params.begin(), params.end() - 1},
                 (std::to_string(params.size() - 1) + " parameters given, the optimizer has " +
                  std::to_string(params.size())).c_str());
  for (const double bound : {-1.0, 0.0, std::numeric_limits<double>::quiet_NaN()}) {
    try {
      optimizer->clip_grad_norm(params, bound);
      ADD_FAILURE() << "accepted max_norm " << bound;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("max_norm must be positive"), std::string::npos)
          << e.what();
    }
  }
  std::reverse(params.begin(), params.end());
  EXPECT_EQ(optimizer->clip_grad_norm(params, 1.0), 0.0);  // any order; no gradients yet
}

// zero_grad() drops the gradients, as PyTorch's default; the next backward
// stores the same numbers zero_grad(false) + backward adds into zeros.
TEST(Optim, ZeroGradDropsGradientsAndZeroGradFalseZerosThem) {
  GPT model(testing::tiny_config().init(InitOptions().seed(7)));
  auto optimizer = configure_optimizers(*model, torch::optim::AdamWOptions(1e-3));
  auto idx = torch::randint(96, {2, 8});
  model->forward(idx, idx).loss.backward();
  const auto grad = model->lm_head->weight.grad().clone();
  optimizer->zero_grad();
  for (const auto& p : model->parameters()) EXPECT_FALSE(p.grad().defined());
  model->forward(idx, idx).loss.backward();
  EXPECT_TRUE(torch::equal(model->lm_head->weight.grad(), grad));
  EXPECT_TRUE(model->lm_head->weight.grad().is_same(model->transformer->wte->weight.grad()));

  optimizer->zero_grad(false);
  for (const auto& p : model->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().abs().sum().item<float>(), 0.0f);
  }
  model->forward(idx, idx).loss.backward();
  EXPECT_TRUE(torch::equal(model->lm_head->weight.grad(), grad));
}

}  // namespace
}  // namespace gpt2
