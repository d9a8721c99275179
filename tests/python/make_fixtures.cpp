// Writes the files the Python interop test reads, into the folder given as
// the first argument:
//   checkpoint.pt  a 12-layer gpt2 checkpoint (narrow: n_embd 64)
//   program.ts     the same model exported as TorchScript
//   expected.pt    {tokens (2, 11) int64, logits (2, 11, vocab)} from the
//                  C++ model, via torch::pickle_save (torch.load reads it)
#include <torch/serialize.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "gpt2/checkpoint.h"
#include "gpt2/export.h"
#include "gpt2/gpt.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_fixtures FOLDER\n";
    return 2;
  }
  const std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir);
  // Real vocabulary and depth so the names and the tie are gpt2's; narrow
  // width and short context to keep the files small.
  const auto config = gpt2::GPTConfig::preset("gpt2").n_embd(64).n_head(4).block_size(32).init(
      gpt2::InitOptions().seed(2024));
  gpt2::GPT model(config);
  model->eval();
  gpt2::save_checkpoint((dir / "checkpoint.pt").string(), *model);
  gpt2::export_torchscript(*model, (dir / "program.ts").string());

  torch::manual_seed(3);
  auto tokens = torch::randint(config.vocab_size(), {2, 11});
  torch::NoGradGuard no_grad;
  auto logits = model(tokens).logits;
  c10::Dict<std::string, torch::Tensor> expected;
  expected.insert("tokens", tokens);
  expected.insert("logits", logits);
  const std::vector<char> bytes = torch::pickle_save(expected);
  std::ofstream((dir / "expected.pt").string(), std::ios::binary).write(bytes.data(), bytes.size());
  std::cout << "fixtures written to " << dir.string() << "\n";
  return 0;
}
