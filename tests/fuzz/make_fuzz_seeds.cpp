// Writes the fuzzers' seed corpora: small valid files of each format, so
// that mutations start from inputs that reach deep into each reader.
//   make_fuzz_seeds FOLDER  ->  FOLDER/{safetensors,llmc,checkpoint,nanogpt,nanogpt_meta}/...
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <torch/optim/adamw.h>

#include "gpt2/file/json.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/io/hf_gpt2.h"
#include "gpt2/io/llmc.h"
#include "gpt2/io/nanogpt.h"
#include "gpt2/io/nanogpt_meta.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_fuzz_seeds FOLDER\n";
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path dir(argv[1]);
  for (const char* sub : {"safetensors", "llmc", "checkpoint", "nanogpt", "nanogpt_meta"}) {
    fs::create_directories(dir / sub);
  }
  // One block, width 8: a few kilobytes per file.
  const auto config = gpt2::GPTConfig().block_size(8).vocab_size(16).n_layer(1).n_head(2).n_embd(8)
                          .init(gpt2::InitOptions().seed(1));
  gpt2::GPT model(config);
  gpt2::save_safetensors((dir / "safetensors" / "f32.safetensors").string(), *model);
  fs::remove(dir / "safetensors" / "config.json");
  auto contents = gpt2::read_safetensors((dir / "safetensors" / "f32.safetensors").string());
  for (auto& [name, t] : contents.tensors) {
    name = "transformer." + name;
    t = t.to(torch::kBFloat16);
  }
  contents.tensors.emplace_back("transformer.h.0.attn.bias", torch::ones({1, 1, 8, 8}, torch::kHalf));
  gpt2::write_safetensors((dir / "safetensors" / "bf16_prefixed.safetensors").string(), contents);
  gpt2::GPT no_bias(gpt2::GPTConfig(config).bias(false));
  gpt2::save_safetensors((dir / "safetensors" / "no_bias.safetensors").string(), *no_bias);
  fs::remove(dir / "safetensors" / "config.json");
  {
    // A header nested just inside the parser's depth limit: mutations of it
    // reach the limit (the seeds above are flat, and missed it).
    const std::string header = R"({"w":{"dtype":"F32","shape":)" +
                               std::string(gpt2::detail::kMaxJsonDepth - 2, '[') +
                               std::string(gpt2::detail::kMaxJsonDepth - 2, ']') +
                               R"(,"data_offsets":[0,0]}})";
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    std::ofstream(dir / "safetensors" / "nested.safetensors", std::ios::binary) << bytes + header;
  }
  gpt2::save_llmc((dir / "llmc" / "v3.bin").string(), *model);
  gpt2::save_llmc((dir / "llmc" / "v5.bin").string(), *model, gpt2::LlmcDtype::kBFloat16);
  gpt2::save_checkpoint((dir / "checkpoint" / "model.pt").string(), *model);
  // With training state: AdamW moments (a nested archive), RNG state, extra
  // text, a table of options (a metadata sub-module).
  torch::optim::AdamW adamw(model->unique_parameters(), torch::optim::AdamWOptions(1e-3));
  model->forward(torch::zeros({1, 4}, torch::kLong), torch::zeros({1, 4}, torch::kLong))
      .loss.backward();
  adamw.step();
  gpt2::save_checkpoint((dir / "checkpoint" / "trained.pt").string(), *model,
                        {1, &adamw, torch::ones({4}, torch::kUInt8), "{\"lr\": 0.001}",
                         {{"lr", 0.001}, {"seed", int64_t{5}}, {"name", std::string("x")}}});
  // nanoGPT's ckpt.pt (Python's torch.save layout), bare and with AdamW state.
  gpt2::save_nanogpt((dir / "nanogpt" / "model.pt").string(), *model);
  gpt2::save_nanogpt((dir / "nanogpt" / "trained.pt").string(), *model,
                     {1, 3.5, {{"learning_rate", 0.001}, {"dataset", std::string("x")}}}, &adamw);
  // nanoGPT's meta.pkl: the library's (protocol 2) and Python's pickle.dump
  // of the same dict (protocol 4: FRAME, MEMOIZE, SHORT_BINUNICODE, BINGET).
  std::ofstream(dir / "nanogpt_meta" / "ours.pkl", std::ios::binary)
      << gpt2::nanogpt_meta_pickle({"\n", "a", "\xc3\xa9"});
  std::ofstream(dir / "nanogpt_meta" / "python.pkl", std::ios::binary)
      << std::string("\x80\x04\x95\x49\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x0a"
                     "vocab_size\x94\x4b\x03\x8c\x04" "itos\x94\x7d\x94\x28\x4b\x00\x8c\x01"
                     "\x0a\x94\x4b\x01\x8c\x01" "a\x94\x4b\x02\x8c\x02\xc3\xa9\x94\x75\x8c\x04"
                     "stoi\x94\x7d\x94\x28\x68\x04\x4b\x00\x68\x05\x4b\x01\x68\x06\x4b\x02"
                     "\x75\x75\x2e", 84);
  std::cout << "seeds written to " << dir.string() << "\n";
  return 0;
}
