// The library's CUDA LayerNorm (gpt2/ops/cuda/layernorm.cu), as the ops seam
// runs it (ops::layer_norm under bfloat16 autocast), against torch's
// layer_norm in float64 on the same fresh random inputs: one row, an odd T,
// a width that is no multiple of a warp, a batch of many chunks; with and
// without a bias; forward and backward; the rule that picks it; and 200
// training steps with it against 200 with torch's. Each test skips, saying
// so, without a GPU (gpu/need_cuda.h).
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "gpt2/model/gpt.h"
#include "gpt2/ops/ops.h"
#include "gpt2/ops/settings.h"
#include "gpu/need_cuda.h"
#include "ops/head_loss_curves.h"

namespace gpt2 {
namespace {

const std::vector<std::vector<int64_t>> kShapes = {{1, 1, 768}, {3, 77, 768}, {8, 1024, 768}, {5, 13, 50}};

struct Inputs {
  torch::Tensor x, w, b;
  Inputs(const std::vector<int64_t>& shape, bool bias, uint64_t seed) {
    torch::manual_seed(seed);
    const int64_t C = shape.back();
    x = torch::randn(shape, kCuda) * 3 + 1;  // a residual stream's scale and offset
    w = torch::randn({C}, kCuda) * 0.5 + 1;
    if (bias) b = torch::randn({C}, kCuda);
  }
};

torch::Tensor seam(const Inputs& in) {
  ops::Autocast autocast(kCuda, torch::kBFloat16);
  return ops::layer_norm(in.x, in.w, in.b, 1e-5);
}

void require_kernels() {
  ASSERT_TRUE(cuda_kernels_built()) << "this build has no CUDA kernels: configure against a "
                                       "CUDA LibTorch with nvcc (GPT2_CUDA_KERNELS)";
}

// Rounded once to bfloat16 from float32 statistics: within half a bf16 ulp
// (2^-9 relative) of the float64 value, plus float32's own error; 2^-8
// leaves room for a value the statistics' rounding moves across a boundary.
TEST(CudaLayerNorm, ForwardIsTorchsRoundedToTheAutocastDtype) {
  NEED_CUDA();
  require_kernels();
  for (const auto& shape : kShapes) {
    for (const bool bias : {true, false}) {
      const Inputs in(shape, bias, 1);
      const torch::Tensor got = seam(in);
      ASSERT_EQ(got.scalar_type(), torch::kBFloat16) << "torch's float32 kernel ran";
      const int64_t C = shape.back();
      const auto want = torch::layer_norm(in.x.to(torch::kDouble), {C}, in.w.to(torch::kDouble),
                                          bias ? in.b.to(torch::kDouble) : torch::Tensor(), 1e-5);
      const auto err = (got.to(torch::kDouble) - want).abs();
      const auto bound = want.abs() * std::ldexp(1.0, -8) + 1e-6;
      EXPECT_TRUE(err.le(bound).all().item<bool>())
          << "C " << C << " rows " << in.x.numel() / C << " bias " << bias << ": worst "
          << (err - bound).max().item<double>() << " past the bound";
    }
  }
}

// The backward sees the bf16 gradient the next product gives (here, the
// cast of g); float64 from that same gradient is the oracle. float32 sums
// over up to 8192 rows (dweight, dbias) or 768 columns (dx) err by about
// sqrt(n) float32 ulps; 1e-4 of the largest value is twenty times that.
TEST(CudaLayerNorm, BackwardMatchesTorchInFloat64) {
  NEED_CUDA();
  require_kernels();
  for (const auto& shape : kShapes) {
    for (const bool bias : {true, false}) {
      Inputs in(shape, bias, 2);
      const int64_t C = shape.back();
      in.x.requires_grad_();
      in.w.requires_grad_();
      if (bias) in.b.requires_grad_();
      const auto g = torch::randn(shape, kCuda);
      (seam(in).to(torch::kFloat) * g).sum().backward();
      auto x64 = in.x.detach().to(torch::kDouble).requires_grad_();
      auto w64 = in.w.detach().to(torch::kDouble).requires_grad_();
      auto b64 = bias ? in.b.detach().to(torch::kDouble).requires_grad_() : torch::Tensor();
      const auto g64 = g.to(torch::kBFloat16).to(torch::kDouble);
      (torch::layer_norm(x64, {C}, w64, b64, 1e-5) * g64).sum().backward();
      const auto close = [](const torch::Tensor& got, const torch::Tensor& want) {
        return (got.to(torch::kDouble) - want).abs().max().item<double>() <=
               1e-4 * want.abs().max().item<double>() + 1e-7;
      };
      EXPECT_TRUE(close(in.x.grad(), x64.grad())) << "dx, C " << C << " bias " << bias;
      EXPECT_TRUE(close(in.w.grad(), w64.grad())) << "dweight, C " << C << " bias " << bias;
      if (bias) {
        EXPECT_TRUE(close(in.b.grad(), b64.grad())) << "dbias, C " << C;
      }
      EXPECT_EQ(in.x.grad().scalar_type(), torch::kFloat);
    }
  }
}

// The parameter gradients are summed in a fixed order: the same inputs give
// the same bits.
TEST(CudaLayerNorm, BackwardRepeatsBitForBit) {
  NEED_CUDA();
  require_kernels();
  std::vector<torch::Tensor> dw;
  for (int run = 0; run < 2; ++run) {
    Inputs in({8, 1024, 768}, true, 3);
    in.w.requires_grad_();
    (seam(in).to(torch::kFloat) * torch::ones_like(in.x)).sum().backward();
    dw.push_back(in.w.grad());
  }
  EXPECT_TRUE(torch::equal(dw[0], dw[1]));
}

// The rule: only under autocast, and not after set_cuda_kernels(false).
TEST(CudaLayerNorm, TorchsKernelRunsWithoutAutocastOrWhenTurnedOff) {
  NEED_CUDA();
  const Inputs in({2, 5, 64}, true, 4);
  EXPECT_EQ(ops::layer_norm(in.x, in.w, in.b, 1e-5).scalar_type(), torch::kFloat);
  set_cuda_kernels(false);
  EXPECT_EQ(seam(in).scalar_type(), torch::kFloat);
  EXPECT_EQ(cuda_kernels_line(), "none (set_cuda_kernels(false))");
  set_cuda_kernels(true);
  EXPECT_EQ(seam(in).scalar_type(), cuda_kernels_built() ? torch::kBFloat16 : torch::kFloat);
}

// Training with the kernel follows training without it (the curves'
// bounds: tests/ops/head_loss_curves.h).
TEST(CudaLayerNorm, TrainsAsTorchsFor200Steps) {
  NEED_CUDA();
  require_kernels();
  const GPTConfig config = GPTConfig().block_size(64).vocab_size(512).n_layer(2).n_head(4).n_embd(128);
  const auto with = testing::loss_curve(config, kCuda, torch::kBFloat16, 200, 8, false);
  set_cuda_kernels(false);
  const auto without = testing::loss_curve(config, kCuda, torch::kBFloat16, 200, 8, false);
  set_cuda_kernels(true);
  testing::expect_curves_agree(with, without);
  EXPECT_LT(with.back(), 0.5 * with.front()) << "the model did not learn the batch";
}

}  // namespace
}  // namespace gpt2
