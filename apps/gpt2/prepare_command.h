#pragma once
// `gpt2 prepare`: tokenize text (files, folders, standard input) into
// nanoGPT's train.bin, val.bin and meta.json, or llm.c's token shards.

#include <CLI/App.hpp>

#include <iosfwd>
#include <string>
#include <vector>

#include "gpt2/train/dataset.h"

namespace gpt2::app {

/// Values of the prepare subcommand's flags.
struct PrepareFlags {
  /// Text files, folders of them, or "-" (standard input), in order.
  std::vector<std::string> inputs;
  /// The folder to write.
  std::string out;
  /// The tokenizer, format, val fraction, shard size and name, threads.
  PrepareOptions options;
};

/// Prepares the data and prints what it wrote; a live progress line when
/// stdout is a terminal. Returns 0; bad input throws gpt2::Error.
int run_prepare(const PrepareFlags& flags, std::ostream& out);

/// Registers `prepare` on `app`; its callback stores the exit code in `*rc`.
void add_prepare_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
