#include "apps/gpt2/prepare_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <iostream>
#include <memory>

#include "gpt2/train/dataset.h"

namespace gpt2::app {

int run_prepare(const PrepareFlags& flags, std::ostream& out) {
  const DatasetMeta meta = prepare_dataset(flags.inputs, flags.out, flags.tokenizer, flags.val_fraction);
  fmt::print(out, "prepared  {}: train.bin {} tokens, val.bin {} tokens (uint16), meta.json\n",
             flags.out, meta.train_tokens, meta.val_tokens);
  fmt::print(out, "tokenizer {} ({} ids{})\n", meta.tokenizer, meta.vocab_size,
             meta.tokenizer == "char" ? ", the text's own characters" : "");
  return 0;
}

void add_prepare_command(CLI::App& app, int* rc) {
  auto flags = std::make_shared<PrepareFlags>();
  CLI::App* cmd = app.add_subcommand(
      "prepare", "Tokenize text into nanoGPT's train.bin / val.bin (uint16) and meta.json");
  cmd->add_option("--input", flags->inputs, "Text file(s), concatenated in order")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", flags->out, "Folder to write")->required();
  cmd->add_option("--tokenizer", flags->tokenizer, "gpt2 (GPT-2's BPE) or char")
      ->check(CLI::IsMember(tokenizer_names()))
      ->capture_default_str();
  cmd->add_option("--val-fraction", flags->val_fraction, "Share of the text kept for val.bin")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->callback([flags, rc] { *rc = run_prepare(*flags, std::cout); });
}

}  // namespace gpt2::app
