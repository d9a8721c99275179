// Data-parallel training on a GPU through NCCL: a group of one, as
// `torchrun --nproc_per_node 1` forms it (one GPU is all the GPU machine
// has; two ranks on one GPU are one NCCL refuses). Each test skips where
// torch sees no GPU; on a GPU a build without NCCL fails, since the GPU
// check's LibTorch (PyPI's) has it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "apps/gpt2/train/launch.h"
#include "gpt2/model/gpt.h"
#include "gpt2/model/init.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/distributed.h"
#include "gpt2/train/trainer.h"
#include "gpu/need_cuda.h"
#include "test_util.h"

namespace gpt2 {
namespace {


// A world of one with its own store on a free loopback port: rank 0,
// LOCAL_RANK 0, so its GPU is cuda:0.
std::shared_ptr<DataParallel> group_of_one(int64_t bucket_bytes = DataParallel::kBucketBytes) {
  DistEnv env;
  env.master_addr = "127.0.0.1";
  env.master_port = app::free_loopback_port();
  return std::make_shared<DataParallel>(env, std::chrono::seconds(60), bucket_bytes,
                                        torch::Device(torch::kCUDA));
}

#define NEED_NCCL()                                                                     \
  NEED_CUDA();                                                                          \
  ASSERT_TRUE(has_nccl()) << "a GPU, but this build has no NCCL: gpt2/CMakeLists.txt's " \
                             "configure line 'NCCL for data-parallel training' says why"

// One rank's mean is its own gradient, so every value must come back as it
// went in: through flat buckets on the GPU (64 bytes: two here), NCCL's
// allreduce and the copy back. The loss, a sum and a text travel between
// the host and the device.
TEST(Nccl, AGroupOfOneAveragesGradientBucketsOnTheGpu) {
  NEED_NCCL();
  const std::shared_ptr<DataParallel> dp = group_of_one(64);
  EXPECT_EQ(dp->backend(), "nccl");
  EXPECT_EQ(dp->device(), kCuda);  // cuda:LOCAL_RANK
  torch::manual_seed(7);
  std::vector<torch::Tensor> ts = {torch::randn({3, 4}, kCuda), torch::randn({5}, kCuda),
                                   torch::randn({2}, kCuda)};
  for (size_t i : {0, 2}) ts[i].mutable_grad() = torch::randn_like(ts[i]);
  std::vector<torch::Tensor> values, grads;
  for (const auto& t : ts) {
    values.push_back(t.cpu());
    grads.push_back(t.grad().defined() ? t.grad().cpu() : torch::zeros_like(t).cpu());
  }
  dp->check_same("recipe", "the same text, with a byte above 127: \xc3\xa9");
  dp->broadcast(ts);
  EXPECT_DOUBLE_EQ(dp->average_gradients(ts, 2.5), 2.5);
  for (size_t i = 0; i < ts.size(); ++i) {
    EXPECT_TRUE(ts[i].is_cuda() && ts[i].grad().is_cuda()) << i;
    EXPECT_TRUE(torch::equal(ts[i].cpu(), values[i])) << i;
    EXPECT_TRUE(torch::equal(ts[i].grad().cpu(), grads[i])) << i;  // [1]: zeros, it had none
  }
  EXPECT_EQ(dp->stats().buckets, 2);  // 48 bytes, then 20 + 8
  EXPECT_EQ(dp->stats().bytes, 19 * 4);
  EXPECT_DOUBLE_EQ(dp->sum(1.25), 1.25);
  EXPECT_TRUE(dp->any(true));
  EXPECT_FALSE(dp->any(false));
}

// The Trainer on a group of one takes the steps it takes alone: check_same,
// the broadcast and each step's average run on NCCL and change nothing.
// Tolerance 1e-4 relative, as the other CUDA tests: a GPU's backward may
// sum in another order from run to run (a few float32 ulps through AdamW),
// while a gradient lost or doubled in the buckets moves the loss by
// percents.
TEST(Nccl, TrainerStepsOnAGroupOfOneEqualTheStepsAlone) {
  NEED_NCCL();
  testing::TempDir dir;
  std::ofstream(dir / "text.txt") << std::string(4000, 'a') + std::string(4000, 'b');
  prepare_dataset({dir / "text.txt"}, dir / "data", "char", 0.25);
  const auto options = TrainOptions().batch_size(4).grad_accum(2).max_steps(8).warmup_steps(1)
                           .eval_steps(2).seed(4);
  auto model = [] {
    GPT m(testing::tiny_config().vocab_size(2).init(InitOptions().seed(6)));
    m->to(kCuda);
    return m;
  };
  Trainer alone(model(), options, dir / "data");
  Trainer grouped(model(), options, dir / "data", group_of_one());
  for (int step = 0; step < 3; ++step) {
    const double a = alone.step().loss, b = grouped.step().loss;
    EXPECT_NEAR(b, a, 1e-4 * std::abs(a)) << "step " << step + 1;
  }
  const double val = alone.evaluate("val");
  EXPECT_NEAR(grouped.evaluate("val"), val, 1e-4 * val);
  const auto a = alone.model->named_parameters(), b = grouped.model->named_parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(b[i].value(), a[i].value(), 1e-4, 1e-6)) << a[i].key();
  }
  EXPECT_EQ(grouped.data_parallel()->stats().calls, 3);
}

}  // namespace
}  // namespace gpt2
