// On a GPU, LibTorch's profiler sees a training step's kernels: what
// `bench train --profile-steps` prints (apps/gpt2/bench/kernel_profile.h).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <numeric>
#include <string>

#include "apps/gpt2/bench/kernel_profile.h"
#include "apps/gpt2/bench/step_floors.h"
#include "gpt2/model/gpt.h"
#include "gpu/need_cuda.h"

namespace gpt2::app {
namespace {

TEST(CudaKernelProfile, ATrainingStepsKernelsAddUpToItsDeviceTime) {
  NEED_CUDA();
  torch::manual_seed(0);
  GPT model(GPTConfig().vocab_size(128).n_layer(2).n_head(2).n_embd(64).block_size(32));
  model->to(torch::kCUDA);
  const auto x = torch::randint(128, {4, 32}, torch::kCUDA);
  const auto step = [&] {
    model->zero_grad();
    model(x, x).loss.backward();
    torch::cuda::synchronize();
  };
  step();
  const KernelProfile p = profile_kernels(step, 3);
  EXPECT_EQ(p.steps, 3);
  ASSERT_GE(p.kernels.size(), 5u) << kernel_table(p, 20);  // products, norms, softmax, ...
  EXPECT_GT(p.device_us_per_step, 0);
  const double sum = std::accumulate(p.kernels.begin(), p.kernels.end(), 0.0,
                                     [](double s, const KernelTime& k) { return s + k.us_per_step; });
  EXPECT_NEAR(sum, p.device_us_per_step, 1e-6 * p.device_us_per_step);
  for (size_t i = 1; i < p.kernels.size(); ++i) {
    EXPECT_GE(p.kernels[i - 1].us_per_step, p.kernels[i].us_per_step);
  }
  // The step's products and norms are named as kernel_kind expects.
  const std::string kinds = kind_table(p, {});
  EXPECT_NE(kinds.find("kind      product "), std::string::npos) << kinds << kernel_table(p, 40);
  EXPECT_NE(kinds.find("kind      norm "), std::string::npos) << kinds << kernel_table(p, 40);
}

}  // namespace
}  // namespace gpt2::app
