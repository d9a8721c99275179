// Every writer with tensors on a device whose memory the CPU cannot read.
// The meta device holds shapes and no values: a writer that reads a
// tensor's bytes without bringing them to the CPU first (the rule of
// gpt2/io/detail/host_tensor.h) would crash here, as one did on a GPU.
// Each must throw a FileError naming the tensor and leave the file it
// would have replaced whole.

#include <gtest/gtest.h>
#include <torch/types.h>

#include <map>
#include <string>

#include "gpt2/io/checkpoint.h"
#include "gpt2/io/hf_gpt2.h"
#include "gpt2/io/llmc.h"
#include "gpt2/io/nanogpt.h"
#include "gpt2/io/safetensors.h"
#include "gpt2/train/optim.h"
#include "io/io_test_util.h"

namespace gpt2 {
namespace {

// Module's own table of a module's parameters. Module::to(kMeta) refuses
// (set_data across tensor types), so the test swaps the tensors itself:
// naming the protected member through a derived class gives a pointer to
// it that reaches it on any Module.
struct ParameterTable : torch::nn::Module {
  static auto of() { return &ParameterTable::parameters_; }
};

// `model` with every parameter replaced by a meta tensor of its shape, in
// the modules' tables and their weight/bias members, the tie kept.
GPT meta_model() {
  GPT model(testing::tiny_config());
  std::map<const void*, torch::Tensor> meta;  // by the CPU tensor's impl: one meta tensor each
  for (const auto& module : model->modules(/*include_self=*/true)) {
    for (auto& item : (*module).*ParameterTable::of()) {
      torch::Tensor& slot = item.value();
      auto [it, fresh] = meta.try_emplace(slot.unsafeGetTensorImpl());
      if (fresh) it->second = torch::empty(slot.sizes(), slot.options().device(torch::kMeta));
      slot = it->second;
    }
    const auto& table = (*module).*ParameterTable::of();
    const auto take = [&](torch::Tensor& member, const char* name) {
      if (const torch::Tensor* t = table.find(name)) member = *t;
    };
    if (auto* linear = module->as<LinearImpl>()) take(linear->weight, "weight"), take(linear->bias, "bias");
    if (auto* norm = module->as<LayerNormImpl>()) take(norm->weight, "weight"), take(norm->bias, "bias");
    if (auto* embedding = module->as<torch::nn::EmbeddingImpl>()) take(embedding->weight, "weight");
  }
  return model;
}

// `write(path)` over a file holding "old": a FileError that names `names`
// and the meta device, and the old bytes still there.
void expect_refused(const std::string& what, const std::function<void(const std::string&)>& write,
                    const std::string& names) {
  testing::TempDir dir;
  const std::string path = dir / "out";
  testing::write_file(path, "old");
  const std::string message = testing::file_error_of([&] { write(path); });
  EXPECT_NE(message.find(names), std::string::npos) << what << ": " << message;
  EXPECT_NE(message.find("meta device"), std::string::npos) << what << ": " << message;
  EXPECT_EQ(testing::read_file(path), "old") << what;
  EXPECT_EQ(dir.entries(), 1) << what << ": a temporary file was left";
}

TEST(Writers, MetaModelIsAFileErrorForEveryWriter) {
  const GPT model = meta_model();
  ASSERT_TRUE(model->lm_head->weight.is_meta());
  ASSERT_TRUE(model->lm_head->weight.is_same(model->transformer->wte->weight));
  for (const auto& p : model->named_parameters()) ASSERT_TRUE(p.value().is_meta()) << p.key();
  expect_refused("save_checkpoint", [&](const std::string& p) { save_checkpoint(p, *model); },
                 "transformer.wte.weight");
  expect_refused("export_torchscript", [&](const std::string& p) { export_torchscript(*model, p); },
                 "transformer.wte.weight");
  expect_refused("save_llmc", [&](const std::string& p) { save_llmc(p, *model); },
                 "transformer.wte.weight");
  expect_refused("save_nanogpt", [&](const std::string& p) { save_nanogpt(p, *model); },
                 "transformer.wte.weight");
  expect_refused("save_llmc bf16",
                 [&](const std::string& p) { save_llmc(p, *model, LlmcDtype::kBFloat16); },
                 "transformer.wte.weight");
}

TEST(Writers, MetaTensorInSafetensorsIsAFileError) {
  SafetensorsContents contents;
  contents.tensors.emplace_back("a", torch::zeros({2, 3}));
  contents.tensors.emplace_back("b", torch::empty({4}, torch::device(torch::kMeta)));
  expect_refused("write_safetensors", [&](const std::string& p) { write_safetensors(p, contents); },
                 "b of safetensors file");
  EXPECT_NE(testing::file_error_of([&] { safetensors_bytes(contents); }).find("b of a safetensors"),
            std::string::npos);
}

TEST(Writers, MetaModelIsAFileErrorForHuggingFacesFolder) {
  testing::TempDir dir;
  const GPT model = meta_model();
  const std::string message =
      testing::file_error_of([&] { save_safetensors(dir / "hf/model.safetensors", *model); });
  EXPECT_NE(message.find("meta device"), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(dir / "hf/model.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir / "hf/config.json"));
}

// The model on the CPU and its optimizer's moments elsewhere: the state
// is refused, naming the moments and the path, and the optimizer keeps them.
TEST(Writers, MetaOptimizerMomentsAreAFileError) {
  GPT model(testing::tiny_config());
  auto opt = configure_optimizers(*model, torch::optim::AdamWOptions(1e-3));
  torch::manual_seed(1);
  const auto x = torch::randint(model->config.vocab_size(), {2, 8});
  model(x, x).loss.backward();
  opt->step();
  auto& state = static_cast<torch::optim::AdamWParamState&>(*opt->state().begin()->second);
  state.exp_avg(state.exp_avg().to(torch::kMeta));
  TrainingState training;
  training.optimizer = opt.get();
  expect_refused("save_checkpoint with optimizer",
                 [&](const std::string& p) { save_checkpoint(p, *model, training); },
                 "AdamW moment in the optimizer state of checkpoint");
  EXPECT_TRUE(state.exp_avg().is_meta()) << "the optimizer's own state was replaced";
}

// A rng state that cannot be read is refused the same way.
TEST(Writers, MetaRngStateIsAFileError) {
  GPT model(testing::tiny_config());
  TrainingState training;
  training.rng_state = torch::empty({16}, torch::device(torch::kMeta).dtype(torch::kUInt8));
  expect_refused("save_checkpoint with rng", [&](const std::string& p) {
    save_checkpoint(p, *model, training);
  }, "rng state of checkpoint");
}

}  // namespace
}  // namespace gpt2
