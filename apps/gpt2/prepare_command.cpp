#include "apps/gpt2/prepare_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "apps/gpt2/common/cli_main.h"

namespace gpt2::app {

int run_prepare(const PrepareFlags& flags, std::ostream& out) {
  PrepareOptions options = flags.options;
  const bool live = ::isatty(STDOUT_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  if (live) {
    options.progress = [&](uint64_t bytes, uint64_t total, int64_t tokens) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(250)) return;
      last = now;
      const double s = std::chrono::duration<double>(now - start).count();
      std::printf("\rprepare   %.1f MB%s, %lld tokens, %.1f MB/s ", static_cast<double>(bytes) / 1e6,
                  total ? fmt::format(" of {:.1f} ({:.0f}%)", static_cast<double>(total) / 1e6,
                                      100.0 * static_cast<double>(bytes) / static_cast<double>(total)).c_str() : "",
                  static_cast<long long>(tokens), static_cast<double>(bytes) / 1e6 / s);
      std::fflush(stdout);
    };
  }
  const DatasetMeta meta = prepare_dataset(flags.inputs, flags.out, options);
  if (live) std::printf("\r\033[K");
  std::fflush(stdout);
  if (meta.format == "llmc") {
    fmt::print(out, "prepared  {}: {} shards of up to {} tokens (llm.c, uint16): val {} tokens, "
                    "train {} tokens; meta.json\n", flags.out, meta.shards, options.shard_tokens,
               meta.val_tokens, meta.train_tokens);
  } else {
    fmt::print(out, "prepared  {}: train.bin {} tokens, val.bin {} tokens (uint16), meta.json\n",
               flags.out, meta.train_tokens, meta.val_tokens);
  }
  fmt::print(out, "tokenizer {} ({} ids{})\n", meta.tokenizer, meta.vocab_size,
             meta.tokenizer == "char" ? ", the text's own characters" : "");
  return 0;
}

void add_prepare_command(CLI::App& app, int* rc) {
  auto flags = std::make_shared<PrepareFlags>();
  PrepareOptions& o = flags->options;
  CLI::App* cmd = app.add_subcommand(
      "prepare", "Tokenize text into nanoGPT's train.bin / val.bin (uint16) and meta.json, or "
                 "llm.c's token shards");
  cmd->add_option("--input", flags->inputs,
                  "Text files, folders (their files in name order) or - (standard input); each "
                  "file is a document")
      ->required()
      ->check(CLI::Validator(
          [](std::string& s) { return s == "-" ? std::string() : CLI::ExistingPath(s); },
          "PATH|-"));
  cmd->add_option("--out", flags->out, "Folder to write")->required();
  cmd->add_option("--tokenizer", o.tokenizer, "gpt2 (GPT-2's BPE) or char")
      ->check(CLI::IsMember(tokenizer_names()))
      ->capture_default_str();
  cmd->add_option("--format", o.format,
                  "nanogpt (train.bin, val.bin) or llmc (NAME_val_000000.bin, "
                  "NAME_train_000001.bin, ...)")
      ->check(CLI::IsMember(data_format_names()))
      ->capture_default_str();
  cmd->add_option("--val-fraction", o.val_fraction, "nanogpt: share of the text kept for val.bin")
      ->check(gpt2::app::in_range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--shard-tokens", o.shard_tokens, "llmc: tokens per shard; the first shard is val")
      ->check(gpt2::app::in_range(int64_t{1}, int64_t{2147483647}))
      ->capture_default_str();
  cmd->add_option("--shard-name", o.shard_name, "llmc: the shards' NAME (default: the folder's name)");
  cmd->add_option("--threads", o.threads, "Tokenizer threads (default: the cores this process may use)")
      ->check(gpt2::app::in_range(1, 1024));
  cmd->callback([flags, rc] { *rc = run_prepare(*flags, std::cout); });
}

}  // namespace gpt2::app
