#pragma once
// `gpt2 convert IN OUT`: a model from one weight format to another
// (gpt2 checkpoint, Hugging Face safetensors file or folder, llm.c .bin),
// told by the names or by --from / --to.

#include <CLI/App.hpp>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

namespace gpt2::app {

/// Values of the convert subcommand's flags.
struct ConvertFlags {
  std::string in;
  std::string out;
  /// Format names (to_string(ModelFormat)); empty means told by the path.
  std::string from, to;
  /// n_head for a safetensors file without config.json.
  std::optional<int64_t> n_head;
  /// Write llm.c's version 5 (bfloat16) instead of 3 (float32).
  bool bf16 = false;
};

/// Reads flags.in, writes flags.out, prints what it did and any notes.
/// Returns 0; bad input throws gpt2::Error.
int run_convert(const ConvertFlags& flags, std::ostream& out);

/// Registers `convert` on `app`; its callback stores the exit code in `*rc`.
void add_convert_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
