// The weight-only products for decoding (gpt2/ops/cpu/packed_linear.h):
// held to float64 arithmetic on the dequantized weight (the kernel's own
// error), and to the float32 product within the rounding the format implies.
#include "gpt2/generate/weight_format.h"
#include "gpt2/ops/ops.h"
#include "gpt2/ops/cpu/packed_linear.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "gpt2/error.h"
#include "gpt2/model/gpt.h"
#include "gpt2/ops/cpu/matmul.h"
#include "gpt2/model/modules.h"

namespace gpt2 {
namespace {

// What the packed matrix holds, as float64.
torch::Tensor dequantized(const cpu::PackedWeight& p) {
  if (p.format == WeightFormat::kInt8) {
    return p.data.to(torch::kDouble) * p.scale.to(torch::kDouble).unsqueeze(1);
  }
  return p.data.to(torch::kDouble);
}

// Sizes that are no multiple of the kernels' 16- and 32-wide steps, so the
// tails run too; three input rows.
struct PackedCase {
  torch::Tensor x, w, b;
};
PackedCase a_case() {
  torch::manual_seed(7);
  return {torch::randn({3, 77}), torch::randn({37, 77}) * 0.05, torch::randn({37})};
}

TEST(PackedLinear, Int8IsTheDequantizedProductAndWithinHalfAStepOfFloat32) {
  const PackedCase c = a_case();
  const cpu::PackedWeight p = cpu::pack_weight(c.w, WeightFormat::kInt8);
  EXPECT_EQ(p.data.scalar_type(), torch::kInt8);
  EXPECT_EQ(p.bytes(), 37 * 77 + 37 * 4);
  const torch::Tensor y = cpu::packed_linear(c.x, p, c.b);
  const torch::Tensor exact = torch::addmm(c.b.to(torch::kDouble), c.x.to(torch::kDouble),
                                           dequantized(p).t());
  EXPECT_LT((y.to(torch::kDouble) - exact).abs().max().item<double>(), 1e-5);
  // Each weight moved by at most half its row's step, so an output by at
  // most sum_k |x_k| * scale / 2.
  const torch::Tensor bound = torch::mm(c.x.abs().to(torch::kDouble),
                                        (p.scale.to(torch::kDouble) / 2).expand({77, 37}));
  const torch::Tensor fp32 = torch::addmm(c.b, c.x, c.w.t()).to(torch::kDouble);
  EXPECT_TRUE(((y.to(torch::kDouble) - fp32).abs() <= bound + 1e-5).all().item<bool>());
  EXPECT_GT((y - fp32.to(torch::kFloat)).abs().max().item<float>(), 0) << "int8 changes numbers";
}

TEST(PackedLinear, Bfloat16IsTheRoundedProductAndWithinItsRelativeStep) {
  const PackedCase c = a_case();
  const cpu::PackedWeight p = cpu::pack_weight(c.w, WeightFormat::kBFloat16);
  EXPECT_EQ(p.data.scalar_type(), torch::kBFloat16);
  EXPECT_FALSE(p.scale.defined());
  const torch::Tensor y = cpu::packed_linear(c.x, p, {});
  const torch::Tensor exact = torch::mm(c.x.to(torch::kDouble), dequantized(p).t());
  EXPECT_LT((y.to(torch::kDouble) - exact).abs().max().item<double>(), 1e-5);
  // bfloat16 keeps 8 significant bits: each weight within 2^-9 of itself.
  const torch::Tensor bound =
      torch::mm(c.x.abs().to(torch::kDouble), c.w.abs().to(torch::kDouble).t()) / 512;
  const torch::Tensor fp32 = torch::mm(c.x, c.w.t()).to(torch::kDouble);
  EXPECT_TRUE(((y.to(torch::kDouble) - fp32).abs() <= bound + 1e-6).all().item<bool>());
}

TEST(PackedLinear, BadWeightsAreRefusedAndFormatsNamed) {
  EXPECT_THROW(cpu::pack_weight(torch::randn({4, 4}), WeightFormat::kFloat32), Error);
  EXPECT_THROW(cpu::pack_weight(torch::randn({4, 4}, torch::kDouble), WeightFormat::kInt8), Error);
  EXPECT_THROW(cpu::pack_weight(torch::randn({4}), WeightFormat::kInt8), Error);
  EXPECT_EQ(weight_format_from_string("int8"), WeightFormat::kInt8);
  EXPECT_EQ(to_string(WeightFormat::kBFloat16), "bf16");
  EXPECT_THROW(weight_format_from_string("int4"), ConfigError);
  const cpu::PackedWeight zero = cpu::pack_weight(torch::zeros({2, 8}), WeightFormat::kInt8);
  EXPECT_TRUE(torch::equal(cpu::packed_linear(torch::ones({1, 8}), zero, {}), torch::zeros({1, 2})));
}

// A Linear uses its packed copy only without autograd, and packs again
// after its weight changes, so the copy is never stale.
TEST(PackedLinear, ALinearUsesItsCopyWithoutAutogradAndRepacksAfterAChange) {
  Linear lin(77, 37);
  const PackedCase c = a_case();
  lin->set_weight_format(WeightFormat::kInt8);
  EXPECT_EQ(lin->weight_format(), WeightFormat::kInt8);
  EXPECT_EQ(lin->weight_bytes(), 37 * 77 + 37 * 4);
  const torch::Tensor with_grad = lin(c.x);
  EXPECT_TRUE(torch::allclose(with_grad, ops::linear(c.x, lin->weight, lin->bias)));
  torch::NoGradGuard no_grad;
  const torch::Tensor packed = lin(c.x);
  EXPECT_TRUE(torch::equal(packed, cpu::packed_linear(c.x, cpu::pack_weight(lin->weight, WeightFormat::kInt8),
                                                 lin->bias)));
  lin->weight.mul_(2);  // as an optimizer step would change it
  const torch::Tensor after = lin(c.x);
  EXPECT_TRUE(torch::equal(after, cpu::packed_linear(c.x, cpu::pack_weight(lin->weight, WeightFormat::kInt8),
                                                lin->bias)));
  lin->set_weight_format(WeightFormat::kFloat32);
  EXPECT_EQ(lin->weight_bytes(), 37 * 77 * 4);
  EXPECT_TRUE(torch::equal(lin(c.x), ops::linear(c.x, lin->weight, lin->bias)));
}

// On a model: the bytes a decoding step reads shrink to about a quarter
// (int8) and a half (bf16), the tie is packed once, and the logits stay
// close to float32's.
TEST(PackedLinear, AModelDecodesFromSmallerWeights) {
  GPT model(GPTConfig().block_size(16).vocab_size(101).n_layer(2).n_head(2).n_embd(64)
                .init(InitOptions().seed(3)));
  model->eval();
  torch::NoGradGuard no_grad;
  const auto idx = torch::randint(101, {2, 16});
  const torch::Tensor fp32 = model(idx).logits;
  const int64_t fp32_bytes = decode_weight_bytes(*model);
  EXPECT_EQ(fp32_bytes, 4 * model->num_parameters());
  set_weight_format(*model, WeightFormat::kBFloat16);
  const torch::Tensor bf16 = model(idx).logits;
  EXPECT_LT(decode_weight_bytes(*model), fp32_bytes * 0.55);
  set_weight_format(*model, WeightFormat::kInt8);
  const torch::Tensor int8 = model(idx).logits;
  EXPECT_LT(decode_weight_bytes(*model), fp32_bytes * 0.3);
  EXPECT_LT((bf16 - fp32).abs().max().item<float>(), 0.05);
  EXPECT_LT((int8 - fp32).abs().max().item<float>(), 0.05);
  EXPECT_GT((int8 - fp32).abs().max().item<float>(), 0);
  set_weight_format(*model, WeightFormat::kFloat32);
  EXPECT_TRUE(torch::equal(model(idx).logits, fp32));
}

}  // namespace
}  // namespace gpt2
