// Files written under one LibTorch load under the others: for each folder
// of tests/io/release_files/ (make_release_files.cpp wrote each under its
// LibTorch), the checkpoint, the TorchScript program, the safetensors
// folder and the llm.c file give the logits that LibTorch computed, and
// the checkpoint's AdamW state restores to its moments.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/serialize.h>
#include <torch/types.h>
#include <torch/version.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "gpt2/io/checkpoint.h"
#include "gpt2/io/model_source.h"
#include "gpt2/model/gpt.h"
#include "gpt2/ops/torch_compat.h"
#include "gpt2/train/optim.h"

namespace gpt2 {
namespace {

const std::filesystem::path kFolder = GPT2_RELEASE_FILES;

std::vector<std::filesystem::path> release_folders() {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(kFolder)) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

struct Expected {
  torch::Tensor tokens, logits, exp_avg;
};

Expected expected_of(const std::filesystem::path& dir) {
  std::ifstream in(dir / "expected.pt", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto tuple = torch::pickle_load(bytes).toTuple();
  return {tuple->elements()[0].toTensor(), tuple->elements()[1].toTensor(),
          tuple->elements()[2].toTensor()};
}

// Float32 sums in another order (another release's kernels) differ in the
// last bits.
void expect_close(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_LE((got - want).abs().max().item<double>(), 1e-5) << what;
}

TEST(ReleaseFiles, TheFoldersAreThoseOfTheCiLegs) {
  std::set<std::string> names;
  for (const auto& dir : release_folders()) names.insert(dir.filename().string());
  EXPECT_EQ(names,
            (std::set<std::string>{"libtorch-1.13.0", "libtorch-2.6.0", "libtorch-2.11.0"}));
  EXPECT_TRUE(names.count("libtorch-" + compat::torch_version()))
      << "this build's LibTorch " << TORCH_VERSION << " has no folder: make_release_files";
}

TEST(ReleaseFiles, EveryFormatGivesTheWritersLogits) {
  for (const auto& dir : release_folders()) {
    SCOPED_TRACE(dir.filename().string());
    const Expected want = expected_of(dir);
    torch::NoGradGuard no_grad;
    for (const char* file : {"checkpoint.pt", "hf/", "model.bin"}) {
      GPT model = load_model((dir / file).string());
      model->eval();
      expect_close(model(want.tokens).logits, want.logits, file);
    }
    torch::jit::Module program = torch::jit::load((dir / "program.ts").string());
    expect_close(program.forward({want.tokens}).toTensor(), want.logits, "program.ts");
  }
}

TEST(ReleaseFiles, TheCheckpointsAdamWStateRestores) {
  for (const auto& dir : release_folders()) {
    SCOPED_TRACE(dir.filename().string());
    const Expected want = expected_of(dir);
    const std::string path = (dir / "checkpoint.pt").string();
    Checkpoint checkpoint = load_checkpoint(path);
    EXPECT_EQ(checkpoint.step, 1);
    ASSERT_TRUE(checkpoint.has_optimizer_state);
    auto optimizer = configure_optimizers(*checkpoint.model, torch::optim::AdamWOptions(1e-2));
    load_optimizer_state(path, *optimizer);
    const auto& adam = static_cast<const torch::optim::AdamWParamState&>(*optimizer->state().at(
        compat::optimizer_state_key(checkpoint.model->lm_head->weight)));
    EXPECT_EQ(adam.step(), 1);
    EXPECT_TRUE(torch::equal(adam.exp_avg(), want.exp_avg));
  }
}

}  // namespace
}  // namespace gpt2
