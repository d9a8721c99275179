#pragma once
// `gpt2 bench lookup`: prompt-lookup decoding against plain greedy decoding
// of the same model and prompt, alternating in one run: tokens/s of each,
// the drafts' acceptance rate, and a check that both gave the same tokens.

#include <CLI/App.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>

namespace gpt2::app {

/// Values of `bench lookup`.
struct BenchLookupFlags {
  /// The model (any format load_model reads), with GPT-2's vocabulary.
  std::string model;
  /// The text whose first `prompt_tokens` tokens are the prompt (default:
  /// the shipped corpus, whose speech headings repeat).
  std::string prompt_file;
  int64_t prompt_tokens = 48;
  int64_t new_tokens = 64;
  /// Tokens proposed per step at most (SamplingOptions::prompt_lookup).
  int64_t draft = 4;
  int repeats = 3;
};

/// Prints both sides and the speed-up; returns 1 when the two outputs
/// differ (prompt lookup must not change greedy text), else 0.
int run_bench_lookup(const BenchLookupFlags& flags, std::ostream& out);

/// Registers `lookup` under the `bench` subcommand.
void add_bench_lookup_command(CLI::App& bench, int* rc);

}  // namespace gpt2::app
