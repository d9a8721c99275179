#pragma once
// `gpt2 eval`: a model measured on fixed tokens, so that two models compare
// on exactly the same ones: the strided perplexity of a text, the loss over
// a whole prepared split, or multiple-choice accuracy (HellaSwag's style).

#include <CLI/App.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>

namespace gpt2::app {

/// Values of the eval subcommand's flags.
struct EvalFlags {
  /// Any file load_model reads.
  std::string model;
  /// --weights: fp32, bf16 or int8.
  std::string weights = "fp32";
  /// --dtype: float32, bfloat16 or float16 (a GPU's decoding dtype).
  std::string dtype = "float32";
  /// --device: cpu, cuda or cuda:N.
  std::string device = "cpu";
  /// --mmap: auto, on or off (gpt2::Mmap).
  std::string mmap = "auto";
  /// A text to score (GPT-2's BPE, or the data's tokenizer with `data`).
  std::string text;
  /// A choices file (JSON Lines, gpt2/train/choices.h) to score.
  std::string choices;
  /// Items of `choices` scored: its first ones (0: all).
  int64_t max_items = 0;
  /// A prepared-data folder: its split's loss, or its tokenizer for `text`
  /// and `choices`.
  std::string data;
  /// "val" or "train".
  std::string split = "val";
  /// Tokens per window (0: the model's block_size) and between window starts
  /// (0: half the window).
  int64_t window = 0, stride = 0;
  /// Where the BPE files are; empty: gpt2::default_bpe_dir().
  std::string bpe_dir;
};

/// Loads the model, scores what the flags name and prints to `out` the
/// token count, the mean loss in nats and the perplexity, or for choices
/// the item count, acc and acc_norm. Returns 0; bad input throws
/// gpt2::Error.
int run_eval(const EvalFlags& flags, std::ostream& out);

/// Registers `eval` on `app`; its callback stores the exit code in `*rc`.
void add_eval_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
