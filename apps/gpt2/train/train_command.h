#pragma once
// `gpt2 train`: nanoGPT's training loop as a command. Prepares the shipped
// corpus when no data is given, prints progress, logs every step to
// OUT/log.csv, checkpoints OUT/ckpt.pt, resumes exactly, stops cleanly on
// SIGINT/SIGTERM, draws OUT/loss.svg and prints a sample. Data-parallel when
// torchrun's variables say WORLD_SIZE > 1, or with --nproc N.

#include <CLI/App.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "apps/gpt2/common/field_flags.h"
#include "apps/gpt2/common/model_flags.h"

namespace gpt2::app {

/// Exit code when max_skips non-finite steps in a row stop the run.
inline constexpr int kDivergedExitCode = 3;

/// Values of the train subcommand's flags.
struct TrainFlags {
  /// Model preset (nano, gpt2, ...) and config overrides; --seed seeds the run.
  ModelFlags model;
  /// Prepared data; empty: prepare the shipped corpus into OUT/data-<tokenizer>.
  std::string data;
  /// Folder of ckpt.pt, log.csv and loss.svg.
  std::string out = "out";
  /// Continue OUT/ckpt.pt with its model and options (model flags given must
  /// match the checkpoint's; training flags given override its options).
  bool resume = false;
  /// Replace OUT/ckpt.pt, which a fresh run refuses otherwise.
  bool overwrite = false;
  /// A model file (any format load_model reads) to fine-tune: the run
  /// starts from its weights and config, with a fresh optimizer and
  /// schedule; the recipe is the finetune preset's unless --preset is given.
  std::string init_from;
  /// Tokens to sample after training; -1: the preset's.
  int64_t sample_tokens = -1;
  /// TrainOptions overrides.
  FieldFlags train;
  /// Data-parallel: local workers to start (1: this process trains).
  int64_t nproc = 1;
  /// Data-parallel: seconds to wait for the others to join, and at each collective.
  double dist_timeout = 300;
  /// --device: cpu, cuda or cuda:N.
  std::string device = "cpu";
  /// --dtype: float32 or bfloat16 (autocast), as nanoGPT's dtype.
  std::string dtype = "float32";
  /// For tests: steps whose loss is made NaN.
  std::vector<int64_t> nan_steps;
};

/// Runs the training the flags describe. Returns 0 when it finished or was
/// stopped by a signal (checkpoint written), kDivergedExitCode when
/// non-finite steps stopped it; bad input throws gpt2::Error.
int run_train(const TrainFlags& flags);

/// Registers `train` on `app`; its callback stores the exit code in `*rc`.
void add_train_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
