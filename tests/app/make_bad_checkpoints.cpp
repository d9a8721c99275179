// Writes the checkpoints the bad-input table (bad_inputs.tsv) loads, into
// FOLDER: half.pt (float16 weights), nan.pt, nan.safetensors and nan.bin
// (NaN and infinite weights in wpe), torch_save.pt (a Python torch.save-style pickle zip) and code.pt (a
// checkpoint whose code record holds a method).
//   make_bad_checkpoints FOLDER
#include <filesystem>
#include <iostream>
#include <limits>

#include "gpt2/io/checkpoint.h"
#include "gpt2/io/hf_gpt2.h"
#include "gpt2/io/llmc.h"
#include "io/io_test_util.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_bad_checkpoints FOLDER\n";
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path dir(argv[1]);
  fs::create_directories(dir);
  const auto config = gpt2::GPTConfig().block_size(8).vocab_size(16).n_layer(1).n_head(2).n_embd(8);
  gpt2::GPT half(config);
  half->to(torch::kHalf);
  gpt2::save_checkpoint((dir / "half.pt").string(), *half);
  gpt2::GPT nan(config);
  {
    torch::NoGradGuard no_grad;
    nan->transformer->wpe->weight[0][0] = std::numeric_limits<float>::quiet_NaN();
    nan->transformer->wpe->weight[1][1] = std::numeric_limits<float>::infinity();
  }
  gpt2::save_checkpoint((dir / "nan.pt").string(), *nan);
  gpt2::save_safetensors((dir / "nan.safetensors").string(), *nan);
  gpt2::save_llmc((dir / "nan.bin").string(), *nan);
  // Python's torch.save({}): data.pkl and version, no constants.pkl, no code/.
  gpt2::testing::write_file((dir / "torch_save.pt").string(),
                            gpt2::testing::zip_of({{"archive/data.pkl", std::string("\x80\x02}q\x00.", 6)},
                                                   {"archive/version", "3\n"}}));
  auto records = gpt2::testing::records_of(gpt2::testing::read_file((dir / "nan.pt").string()));
  for (auto& [name, bytes] : records) {
    if (name == "archive/code/__torch__.py") bytes += "  def forward(self):\n    return 1\n";
  }
  gpt2::testing::write_file((dir / "code.pt").string(), gpt2::testing::zip_of(records));
  std::cout << "bad checkpoints written to " << dir.string() << "\n";
  return 0;
}
