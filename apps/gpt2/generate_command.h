#pragma once
// `gpt2 generate`: text from a model, streamed as it is sampled.

#include <CLI/App.hpp>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "apps/gpt2/common/model_flags.h"
#include "gpt2/generate/generate.h"

namespace gpt2::app {

/// Values of the generate subcommand's flags.
struct GenerateFlags {
  /// A fresh model from these flags (random weights) unless `checkpoint`.
  ModelFlags model;
  /// The model to sample from.
  std::string checkpoint;
  std::string prompt;
  int64_t max_new_tokens = 100;
  /// Prompt-lookup decoding's proposals per step (0: off).
  int64_t prompt_lookup = 0;
  double temperature = 0.8;
  std::optional<int64_t> top_k = 200;
  double top_p = 1.0;
  uint64_t seed = 1337;
  bool no_cache = false;
  /// --no-cuda-graphs: on a GPU, run each decoding step op by op.
  bool no_cuda_graphs = false;
  /// --draw: auto, host or device (gpt2::Draw).
  std::string draw = "auto";
  /// --weights: fp32, bf16 or int8.
  std::string weights = "fp32";
  /// --dtype: float32, bfloat16 or float16 (a GPU's decoding dtype).
  std::string dtype = "float32";
  /// --device: cpu, cuda or cuda:N.
  std::string device = "cpu";
  /// --mmap: auto, on or off (gpt2::Mmap).
  std::string mmap = "auto";
  /// Where the tokenizer's files are; empty: gpt2::default_bpe_dir().
  std::string bpe_dir;

  /// The sampling options these flags ask for (stopping at <|endoftext|>).
  SamplingOptions sampling(int64_t stop_token) const;
};

/// Loads or builds the model, encodes the prompt, streams the continuation
/// to `text` and ends with a statistics line on `stats` (prompt and
/// generated token counts, time to first token, tokens/s). Returns 0; bad
/// input throws gpt2::Error.
int run_generate(const GenerateFlags& flags, std::ostream& text, std::ostream& stats);

/// Registers `generate` on `app`; its callback stores the exit code in `*rc`.
void add_generate_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
