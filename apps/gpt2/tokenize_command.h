#pragma once
// `gpt2 tokenize`: text to GPT-2 token ids and back, as a filter.

#include <CLI/App.hpp>

#include <iosfwd>
#include <string>

namespace gpt2::app {

/// Values of the tokenize subcommand's flags.
struct TokenizeFlags {
  /// Ids (whitespace-separated decimal) to text instead of text to ids.
  bool decode = false;
  /// "<|endoftext|>" in text becomes 50256 instead of seven plain tokens.
  bool allow_special = false;
  /// File to read; "-" is standard input.
  std::string input = "-";
  /// Folder with encoder.json and vocab.bpe; empty: the shipped copy.
  std::string bpe_dir;
};

/// Reads flags.input (`in` when it is "-") and writes one line of ids, or
/// the decoded bytes, to `out`. Returns 0; throws FileError for unreadable
/// input and InputError for text that is not ids, or ids outside the
/// vocabulary, naming them.
int run_tokenize(const TokenizeFlags& flags, std::istream& in, std::ostream& out);

/// Registers `tokenize` on `app`; its callback stores the exit code in `*rc`.
void add_tokenize_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
