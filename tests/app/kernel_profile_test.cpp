// `bench train --profile-steps`'s table: the largest kernels with their
// shares of the step's device time, the rest in one row; and the profiler
// refuses a step that puts nothing on a GPU rather than print an empty table.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "apps/gpt2/bench/kernel_profile.h"
#include "apps/gpt2/bench/step_floors.h"
#include "gpt2/error.h"

namespace gpt2::app {
namespace {

KernelProfile three_kernels() {
  KernelProfile p;
  p.steps = 4;
  p.kernels = {{"gemm_bf16", 600, 3}, {"layer_norm", 300, 2}, {"elementwise_add", 100, 5}};
  p.device_us_per_step = 1000;
  p.calls_per_step = 10;
  return p;
}

TEST(KernelTable, ListsTheLargestWithTheirSharesAndTheRestInOneRow) {
  const std::string table = kernel_table(three_kernels(), 2);
  EXPECT_NE(table.find("device time 1.00 ms a step in 10 launches"), std::string::npos) << table;
  EXPECT_NE(table.find("600.0 us  60.0%    3.0x  gemm_bf16"), std::string::npos) << table;
  EXPECT_NE(table.find("300.0 us  30.0%    2.0x  layer_norm"), std::string::npos) << table;
  EXPECT_EQ(table.find("elementwise_add"), std::string::npos) << table;
  EXPECT_NE(table.find("100.0 us  10.0%    5.0x  (1 other names)"), std::string::npos) << table;
}

TEST(KernelTable, CutsLongNames) {
  KernelProfile p = three_kernels();
  p.kernels[0].name = std::string(300, 'k');
  const std::string table = kernel_table(p, 3);
  EXPECT_NE(table.find(std::string(97, 'k') + "...\n"), std::string::npos) << table;
  EXPECT_EQ(table.find(std::string(98, 'k')), std::string::npos) << table;
}

// Names as LibTorch's profiler reports them on an H100/H200 and an A100.
TEST(KernelKind, NamesFallIntoTheirKinds) {
  const std::map<std::string, std::string> kinds = {
      {"nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "product"},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "product"},
      {"ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn", "product"},
      {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn>", "product"},
      {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>, true>", "attention"},
      {"fmha_cutlassB_bf16_aligned_64x64_k64_sm80", "attention"},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3", "attention"},
      {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>",
       "optimizer"},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>", "norm"},
      {"void gpt2::ops::cuda::(anonymous namespace)::layernorm_forward_kernel<__nv_bfloat16>",
       "norm"},
      {"void gpt2::ops::cuda::(anonymous namespace)::layernorm_backward_partial_kernel<float>",
       "norm"},
      {"void at::native::GammaBetaBackwardCUDAKernel<float, float>", "norm"},
      {"void (anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>", "loss"},
      {"void gpt2::ops::cuda::(anonymous namespace)::classifier_kernel<__nv_bfloat16>(...)",
       "loss"},
      {"void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long>", "embedding"},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>", "reduce"},
      {"void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>", "pointwise"},
      {"Memcpy DtoD (Device -> Device)", "copy"},
      {"Memset (Device)", "copy"},
  };
  for (const auto& [name, kind] : kinds) EXPECT_EQ(kernel_kind(name), kind) << name;
}

// GPT-2 124M at B 32, T 1024 under bf16 autocast: each floor from its
// formula, by hand.
TEST(StepFloors, EachKindsLeastTimeFromTheModelsWork) {
  StepShape s;
  s.n_layer = 12, s.n_embd = 768, s.vocab = 50257, s.batch = 32, s.seq = 1024, s.params = 124439808;
  const double tokens = 32.0 * 1024, C = 768;
  const auto f = step_floors_us(s, 500e12, 4e12);
  EXPECT_DOUBLE_EQ(f.at("product"), 6 * tokens * (12 * 12 * C * C + C * 50304) / 500e12 * 1e6);
  EXPECT_NEAR(f.at("product"), 48589, 1);  // about 49 ms of products
  EXPECT_DOUBLE_EQ(f.at("attention"), 6 * tokens * 12 * 1024 * C / 500e12 * 1e6);
  EXPECT_DOUBLE_EQ(f.at("norm"), 25 * tokens * C * 16 / 4e12 * 1e6);
  EXPECT_DOUBLE_EQ(f.at("loss"), 4 * tokens * 50304 / 4e12 * 1e6);
  EXPECT_DOUBLE_EQ(f.at("optimizer"), 32 * 124439808.0 / 4e12 * 1e6);
  EXPECT_EQ(f.count("pointwise"), 0u);
  s.act_bytes = 4;  // float32: wider activations, the same products
  const auto wide = step_floors_us(s, 500e12, 4e12);
  EXPECT_DOUBLE_EQ(wide.at("norm"), 25 * tokens * C * 20 / 4e12 * 1e6);
  EXPECT_DOUBLE_EQ(wide.at("product"), f.at("product"));
  EXPECT_TRUE(step_floors_us(s, 0, 0).empty());  // nothing measured, no floor
  GPT model(GPTConfig().vocab_size(96).n_layer(2).n_head(2).n_embd(32).block_size(16));
  const StepShape of = StepShape::of(*model, 4, 16, 2);
  EXPECT_EQ(of.n_layer * 1000 + of.n_embd, 2032);
  EXPECT_EQ(of.vocab, 96);
  EXPECT_EQ(of.params, model->num_parameters());  // the tied matrix once
}

TEST(KindTable, SumsEachKindLargestFirstWithItsFloor) {
  KernelProfile p;
  p.steps = 2;
  p.kernels = {{"nvjet_a", 500, 4}, {"vectorized_layer_norm_kernel", 200, 2},
               {"sm90_xmma_gemm_b", 100, 1}, {"elementwise_add", 200, 6}};
  p.device_us_per_step = 1000;
  p.calls_per_step = 13;
  const std::string table = kind_table(p, {{"product", 300}, {"norm", 400}});
  EXPECT_NE(table.find("kind      product        600.0 us  60.0%    5.0x  floor     300.0 us, "
                       "2.00x it\n"), std::string::npos) << table;
  EXPECT_NE(table.find("kind      norm           200.0 us  20.0%    2.0x  floor     400.0 us, "
                       "0.50x it\n"), std::string::npos) << table;
  EXPECT_NE(table.find("kind      pointwise      200.0 us  20.0%    6.0x\n"), std::string::npos)
      << table;
  EXPECT_LT(table.find("product"), table.find("norm")) << table;
}

TEST(KernelProfile, AStepOnTheCpuIsRefusedNotAnEmptyTable) {
  auto a = torch::randn({64, 64});
  int runs = 0;
  try {
    profile_kernels([&] { a = torch::mm(a, a).tanh(); ++runs; }, 2);
    FAIL() << "a CPU step gave a kernel table";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("no device event in 2 steps") != std::string::npos ||
                what.find("did not start") != std::string::npos) << what;
  }
  EXPECT_LE(runs, 2);
  EXPECT_THROW(profile_kernels([] {}, 0), Error);
}

}  // namespace
}  // namespace gpt2::app
