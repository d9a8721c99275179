// The fused head (ops::head_loss, which fuses on the GPU by default) against
// the two ops it replaces, written out in float64 on the same GPU: GPT-2's
// vocabulary of 50257, one row, an odd T, a batch of several chunks; in
// float32 and under bfloat16 autocast; and 200 training steps through
// GPTImpl::loss against 200 through nanoGPT's forward. Each test skips,
// saying so, without a GPU (gpu/need_cuda.h).
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>

#include "gpt2/model/gpt.h"
#include "gpt2/ops/ops.h"
#include "gpt2/ops/settings.h"
#include "gpu/need_cuda.h"
#include "ops/head_loss_curves.h"

namespace gpt2 {
namespace {

namespace F = torch::nn::functional;

struct Result {
  torch::Tensor loss, dx, dw;
};

// Rows x (N, 768) of a unit scale as ln_f gives, W (50257, 768) as GPT-2's
// init draws it, a tenth of the targets -1 (never the first).
struct GpuHeadLossCase {
  torch::Tensor x, w, targets;
  explicit GpuHeadLossCase(int64_t N) {
    torch::manual_seed(N);
    x = torch::randn({N, 768}, kCuda);
    w = torch::randn({50257, 768}, kCuda) * 0.02;
    targets = torch::randint(50257, {N}, torch::TensorOptions(kCuda).dtype(torch::kLong));
    targets.masked_fill_(torch::rand({N}, kCuda) < 0.1, -1);
    targets[0] = 0;  // a row is scored whatever the draw: no loss is 0 / 0
  }
};

Result run(const GpuHeadLossCase& c, bool fused, torch::ScalarType dtype, torch::ScalarType autocast) {
  auto x = c.x.to(dtype).detach().requires_grad_();
  auto w = c.w.to(dtype).detach().requires_grad_();
  torch::Tensor loss;
  {
    ops::Autocast scope(kCuda, autocast);
    loss = fused ? ops::head_loss(x, w, c.targets)
                 : F::cross_entropy(torch::linear(x, w), c.targets,
                                    F::CrossEntropyFuncOptions().ignore_index(-1));
  }
  if (fused) {  // the rule's choice on a GPU
    EXPECT_NE(loss.grad_fn()->name().find("FusedHeadLoss"), std::string::npos);
  }
  loss.backward();
  return {loss.detach().to(torch::kDouble), x.grad().to(torch::kDouble),
          w.grad().to(torch::kDouble)};
}

// The largest difference over the largest value of the reference.
double rel(const torch::Tensor& got, const torch::Tensor& want) {
  return (got - want).abs().max().item<double>() / want.abs().max().item<double>();
}

void expect_close(int64_t N, torch::ScalarType autocast, double tolerance) {
  const GpuHeadLossCase c(N);
  const Result want = run(c, false, torch::kDouble, torch::kFloat);
  const Result fused = run(c, true, torch::kFloat, autocast);
  const Result plain = run(c, false, torch::kFloat, autocast);
  std::cout << "N " << N << ", " << c10::toString(autocast) << ": loss, dx, dW off float64 by "
            << rel(fused.loss, want.loss) << ", " << rel(fused.dx, want.dx) << ", "
            << rel(fused.dw, want.dw) << " fused; " << rel(plain.loss, want.loss) << ", "
            << rel(plain.dx, want.dx) << ", " << rel(plain.dw, want.dw) << " two ops\n";
  EXPECT_LT(rel(fused.loss, want.loss), tolerance);
  EXPECT_LT(rel(fused.dx, want.dx), tolerance);
  EXPECT_LT(rel(fused.dw, want.dw), tolerance);
}

TEST(CudaHeadLoss, Float32EqualsTheTwoOps) {
  NEED_CUDA();
  for (int64_t N : {1, 77, 4096}) expect_close(N, torch::kFloat, 1e-5);
}

TEST(CudaHeadLoss, BFloat16AutocastIsWithinItsRounding) {
  NEED_CUDA();
  for (int64_t N : {1, 77, 4096}) expect_close(N, torch::kBFloat16, 2e-2);
}

// The library's classifier kernel (gpt2/ops/cuda/classifier.cu, the fused
// head's scoring on a GPU) against torch's ops scoring the same logits in
// chunks (set_cuda_kernels(false)): the same loss and gradients to the
// rounding of the logits' type.
TEST(CudaHeadLoss, TheClassifierKernelScoresAsTorchsOps) {
  NEED_CUDA();
  ASSERT_TRUE(cuda_kernels_built()) << "this build has no CUDA kernels: configure against a "
                                       "CUDA LibTorch with nvcc (GPT2_CUDA_KERNELS)";
  for (const auto autocast : {torch::kFloat, torch::kBFloat16}) {
    for (int64_t N : {1, 77, 4096}) {
      const GpuHeadLossCase c(N);
      const Result kernel = run(c, true, torch::kFloat, autocast);
      set_cuda_kernels(false);
      const Result ops = run(c, true, torch::kFloat, autocast);
      set_cuda_kernels(true);
      const double tolerance = autocast == torch::kFloat ? 1e-5 : 1e-2;
      SCOPED_TRACE(::testing::Message() << "N " << N << ", " << c10::toString(autocast));
      EXPECT_LT(rel(kernel.loss, ops.loss), tolerance);
      EXPECT_LT(rel(kernel.dx, ops.dx), tolerance);
      EXPECT_LT(rel(kernel.dw, ops.dw), tolerance);
    }
  }
}

// The same 200 steps from the same seed, through the fused head and
// through the logits, under bfloat16 autocast (testing::expect_curves_agree).
// On the CPU (Intel Xeon) these shapes gave curves 6.9% apart at worst
// above a loss of 0.5, 0.12 at worst in all, from 10.85 to 0.002.
TEST(CudaHeadLoss, TrainsAsTheTwoOpsFor200Steps) {
  NEED_CUDA();
  const GPTConfig config =
      GPTConfig().vocab_size(50257).block_size(64).n_layer(2).n_head(4).n_embd(128);
  const auto fused = testing::loss_curve(config, kCuda, torch::kBFloat16, 200, 8, false);
  const auto plain = testing::loss_curve(config, kCuda, torch::kBFloat16, 200, 8, true);
  std::cout << "loss at steps 0, 100, 199: fused " << fused[0] << ", " << fused[100] << ", "
            << fused[199] << "; two ops " << plain[0] << ", " << plain[100] << ", " << plain[199]
            << "\n";
  EXPECT_LT(fused.back(), fused.front() - 1.0) << "the model did not learn the counting";
  testing::expect_curves_agree(fused, plain);
}

}  // namespace
}  // namespace gpt2
