#pragma once
// `gpt2 prepare`: tokenize text files into nanoGPT's train.bin, val.bin and
// meta.json.

#include <CLI/App.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace gpt2::app {

/// Values of the prepare subcommand's flags.
struct PrepareFlags {
  /// Text files, concatenated in order.
  std::vector<std::string> inputs;
  /// The folder to write.
  std::string out;
  /// "gpt2" or "char".
  std::string tokenizer = "gpt2";
  /// Share of the text (its tail) that becomes val.bin.
  double val_fraction = 0.1;
};

/// Prepares the data and prints what it wrote. Returns 0; bad input throws gpt2::Error.
int run_prepare(const PrepareFlags& flags, std::ostream& out);

/// Registers `prepare` on `app`; its callback stores the exit code in `*rc`.
void add_prepare_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
