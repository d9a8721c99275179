// Writes the files the Python interop test reads, into two subfolders of the
// folder given as the first argument: gpt2/ (GPT-2's tanh GELU and biases)
// and exact_nobias/ (3 layers, erf GELU, no biases), each with
//   checkpoint.pt  a 12-layer gpt2 checkpoint (narrow: n_embd 64)
//   program.ts     the same model exported as TorchScript
//   expected.pt    (tokens (2, 11) int64, logits (2, 11, vocab)) from the
//                  C++ model, via torch::pickle_save (torch.load reads it,
//                  weights_only=True)
#include <torch/serialize.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "gpt2/io/checkpoint.h"
#include "gpt2/model/gpt.h"

namespace {

// One fixture set in `dir`: checkpoint.pt, program.ts and expected.pt.
void write_fixtures(const std::filesystem::path& dir, const gpt2::GPTConfig& config) {
  std::filesystem::create_directories(dir);
  gpt2::GPT model(config);
  model->eval();
  gpt2::save_checkpoint((dir / "checkpoint.pt").string(), *model);
  gpt2::export_torchscript(*model, (dir / "program.ts").string());

  torch::manual_seed(3);
  auto tokens = torch::randint(config.vocab_size(), {2, 11});
  torch::NoGradGuard no_grad;
  auto logits = model(tokens).logits;
  // A tuple: a typed c10::Dict pickles a type tag (torch.jit._pickle), a
  // global that torch.load(weights_only=True), 2.6's default, refuses.
  const std::vector<char> bytes = torch::pickle_save(c10::ivalue::Tuple::create({tokens, logits}));
  std::ofstream((dir / "expected.pt").string(), std::ios::binary).write(bytes.data(), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_fixtures FOLDER\n";
    return 2;
  }
  const std::filesystem::path dir(argv[1]);
  // Real vocabulary and depth so the names and the tie are gpt2's; narrow
  // width and short context to keep the files small.
  const auto config = gpt2::GPTConfig::preset("gpt2").n_embd(64).n_head(4).block_size(32).init(
      gpt2::InitOptions().seed(2024));
  write_fixtures(dir / "gpt2", config);
  // The other branches of the forward: erf GELU, no biases.
  write_fixtures(dir / "exact_nobias",
                 gpt2::GPTConfig(config).n_layer(3).gelu(gpt2::Gelu::kExact).bias(false));
  std::cout << "fixtures written to " << dir.string() << "\n";
  return 0;
}
