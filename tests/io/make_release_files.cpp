// Writes the files of one small model as this build's LibTorch writes them,
// into FOLDER/libtorch-<version>/ (1.13.0, 2.6.0, ...), for
// release_files_test.cpp and tests/python/interop_test.py to read under
// every LibTorch the library builds against:
//   checkpoint.pt  the weights and the AdamW state after one training step
//   program.ts     the model exported as TorchScript
//   hf/            Hugging Face safetensors with config.json
//   model.bin      llm.c, float32
//   expected.pt    (tokens, logits, exp_avg of lm_head.weight) from this
//                  LibTorch, via torch::pickle_save (a tuple, which
//                  torch.load(weights_only=True) reads)
// The committed folders are tests/io/release_files/; regenerate one with
//   build/tests/make_release_files tests/io/release_files
// on the machine of that LibTorch (Debian 12: 1.13; sh cmake/debian13.sh
// 'build/tests/make_release_files tests/io/release_files': 2.6).
#include <torch/serialize.h>
#include <torch/types.h>
#include <torch/version.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "gpt2/io/checkpoint.h"
#include "gpt2/io/model_source.h"
#include "gpt2/model/gpt.h"
#include "gpt2/ops/torch_compat.h"
#include "gpt2/train/optim.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_release_files FOLDER\n";
    return 2;
  }
  const std::filesystem::path dir =
      std::filesystem::path(argv[1]) / ("libtorch-" + gpt2::compat::torch_version());
  std::filesystem::create_directories(dir);

  torch::manual_seed(5);
  gpt2::GPT model(gpt2::GPTConfig().block_size(8).vocab_size(16).n_layer(2).n_head(2).n_embd(8).init(
      gpt2::InitOptions().seed(2026)));
  const torch::Tensor tokens = torch::randint(16, {2, 8});
  const torch::Tensor targets = torch::randint(16, {2, 8});
  auto optimizer = gpt2::configure_optimizers(*model, torch::optim::AdamWOptions(1e-2));
  model->train();
  model(tokens, targets).loss.backward();
  optimizer->step();
  model->eval();

  gpt2::TrainingState state;
  state.step = 1;
  state.optimizer = optimizer.get();
  gpt2::save_checkpoint((dir / "checkpoint.pt").string(), *model, state);
  gpt2::export_torchscript(*model, (dir / "program.ts").string());
  gpt2::save_model((dir / "hf").string() + "/", *model);
  gpt2::save_model((dir / "model.bin").string(), *model);

  torch::NoGradGuard no_grad;
  const torch::Tensor logits = model(tokens).logits;
  const auto& adam = static_cast<const torch::optim::AdamWParamState&>(
      *optimizer->state().at(gpt2::compat::optimizer_state_key(model->lm_head->weight)));
  const std::vector<char> bytes =
      torch::pickle_save(c10::ivalue::Tuple::create({tokens, logits, adam.exp_avg()}));
  std::ofstream((dir / "expected.pt").string(), std::ios::binary).write(bytes.data(), bytes.size());
  std::cout << "release files of LibTorch " << TORCH_VERSION << " written to " << dir.string() << "\n";
  return 0;
}
