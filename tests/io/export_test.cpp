#include "gpt2/io/checkpoint.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/types.h>
#include <torch/utils.h>


#include "gpt2/error.h"
#include "test_util.h"

namespace gpt2 {
namespace {

// Exports, loads back with plain torch::jit::load, and compares logits with
// the eager model for several lengths, 1 and block_size included.
void expect_export_matches_eager(const GPTConfig& config, const std::string& name) {
  GPT model(config);
  model->eval();
  testing::TempDir dir;
  export_torchscript(*model, dir / name);
  auto program = torch::jit::load(dir / name);
  torch::NoGradGuard no_grad;
  for (int64_t t : {int64_t{1}, int64_t{2}, config.block_size() / 2 + 1, config.block_size()}) {
    auto idx = torch::randint(config.vocab_size(), {2, t});
    auto eager = model(idx).logits;
    auto scripted = program.forward({idx}).toTensor();
    ASSERT_EQ(scripted.sizes(), eager.sizes()) << "T " << t;
    // Same ops in the same order on float32: agreement far inside 1e-5.
    EXPECT_LT((scripted - eager).abs().max().item<double>(), 1e-5) << name << " T " << t;
  }
  auto params = program.named_parameters(/*recurse=*/true);
  std::vector<std::string> names;
  torch::Tensor head, wte;
  for (const auto& p : params) {
    names.push_back(p.name);
    if (p.name == "lm_head.weight") head = p.value;
    if (p.name == "transformer.wte.weight") wte = p.value;
  }
  EXPECT_EQ(names, model->named_parameters().keys());
  ASSERT_TRUE(head.defined() && wte.defined());
  EXPECT_EQ(head.data_ptr(), wte.data_ptr());
}

TEST(Export, TorchScriptLogitsMatchEagerTiny) {
  torch::manual_seed(20);
  expect_export_matches_eager(testing::tiny_config(), "tiny.ts");
}

TEST(Export, TorchScriptLogitsMatchEagerNoBiasExactGelu) {
  torch::manual_seed(21);
  expect_export_matches_eager(
      GPTConfig().n_layer(3).n_head(2).n_embd(48).vocab_size(200).block_size(40).bias(false).gelu(
          Gelu::kExact),
      "nobias.ts");
}

TEST(Export, ModelIsUnchangedAndKeepsWorking) {
  torch::manual_seed(22);
  GPT model(testing::tiny_config());
  std::vector<torch::Tensor> before;
  for (const auto& p : model->parameters()) before.push_back(p.clone());
  testing::TempDir dir;
  export_torchscript(*model, dir / "unchanged.ts");
  auto after = model->parameters();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(torch::equal(before[i], after[i]));
  auto idx = torch::randint(96, {1, 5});
  model->forward(idx, idx).loss.backward();
  EXPECT_TRUE(model->lm_head->weight.grad().defined());
  EXPECT_EQ(model->lm_head->weight.data_ptr(), model->transformer->wte->weight.data_ptr());
}

TEST(Export, ProgramRejectsTooLongSequences) {
  GPT model(testing::tiny_config());
  auto program = to_torchscript(*model);
  try {
    program.forward({torch::zeros({1, 17}, torch::kLong)});
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("sequence length 17 is outside [1, 16]"), std::string::npos)
        << e.what();
  }
}

TEST(Export, UnwritablePathIsAFileError) {
  GPT model(testing::tiny_config());
  EXPECT_THROW(export_torchscript(*model, "/nonexistent-folder/x.ts"), FileError);
}

}  // namespace
}  // namespace gpt2
