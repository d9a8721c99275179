#pragma once
// `gpt2 init-study train`: one deep, narrow char-level model trained from
// the same seed and the same batches under each residual scheme, at each of
// a few learning rates. Reports, per run, whether the trainer's non-finite
// guard stopped it (diverged), its val loss and its time; draws the loss
// curves into one picture.

#include <CLI/App.hpp>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "gpt2/model/config.h"
#include "gpt2/train/train_options.h"

namespace gpt2::app {

/// Values of `init-study train`. The recipe is the nano preset's (AdamW,
/// warm-up, cosine to lr / 10, clipping at 1, dropout 0) on the shipped
/// corpus, char-level; these change the model's shape and the run's length.
struct TrainStudyFlags {
  int64_t n_layer = 48;
  int64_t n_embd = 128;
  int64_t n_head = 4;
  /// Tokens per sequence (T).
  int64_t block_size = 32;
  /// Sequences per step (B).
  int64_t batch_size = 8;
  /// Optimizer steps per run.
  int64_t steps = 150;
  /// Peak learning rates, one set of runs each; empty: the nano preset's
  /// and kHighLrFactor times it.
  std::vector<double> lrs;
  /// Steps between val evaluations (and at the start and end).
  int64_t eval_interval = 25;
  /// Batches per val evaluation.
  int64_t eval_steps = 6;
  /// Seed of the init, the batch order and dropout: the same for every run.
  uint64_t seed = 1337;
  /// Prepared char-level data; empty: the shipped corpus, prepared into OUT/data-char.
  std::string data;
  /// Folder for init_train.csv, init_train_curves.csv and init_train.svg.
  std::string out = ".";
};

/// The higher learning rate is this many times the preset's.
inline constexpr double kHighLrFactor = 4.0;

/// Throws ConfigError naming the first flag out of range and its value.
void validate(const TrainStudyFlags& flags);

/// The model of every run: the nano preset's with the flags' shape, the
/// data's vocabulary, and `scheme` seeded from flags.seed.
GPTConfig study_model(const TrainStudyFlags& flags, int64_t vocab_size, ResidualScale scheme);
/// The recipe of a run at peak rate `lr`: the nano preset's, with the flags'
/// batch, steps, evaluation and seed, min_lr lr / 10, no checkpoints.
TrainOptions study_options(const TrainStudyFlags& flags, double lr);
/// The learning rates the flags ask for (their own, or the default pair).
std::vector<double> study_lrs(const TrainStudyFlags& flags);

/// One training run of the study.
struct StudyRun {
  ResidualScale scheme = ResidualScale::kTwoPerBlock;
  double lr = 0;
  /// True when max_skips non-finite steps in a row stopped the run.
  bool diverged = false;
  /// Steps done (skipped ones included).
  int64_t steps = 0;
  /// Steps skipped by the non-finite guard.
  int64_t skipped = 0;
  /// Mean training loss of each step, 1 .. steps (NaN for a skipped one).
  std::vector<double> train_loss;
  /// (steps done, val loss) at each evaluation, the first at step 0.
  std::vector<std::pair<int64_t, double>> val;
  /// Wall time of the run, evaluations included.
  double seconds = 0;
};

/// Maps a micro-batch's loss before backward (steps done, loss); tests use
/// it to make a run diverge.
using LossHook = std::function<torch::Tensor(int64_t, const torch::Tensor&)>;

/// Trains `config` by `options` on `data_dir` with run_training (its guard
/// decides divergence), printing a line per evaluation to `out`. The
/// run's end-of-run checkpoint goes to `scratch` and is removed.
StudyRun train_study_run(const GPTConfig& config, const TrainOptions& options,
                         const std::string& data_dir, const std::string& scratch,
                         std::ostream& out, const LossHook& loss_hook = {});

/// Runs every scheme at every learning rate (lr-major, schemes in
/// kStudySchemes order), prints the table to `out`, writes
/// OUT/init_train.csv (a row per run), OUT/init_train_curves.csv (a row per
/// step and evaluation) and OUT/init_train.svg. Flags are validated before
/// anything is written.
std::vector<StudyRun> run_train_study(const TrainStudyFlags& flags, std::ostream& out);

/// Registers `train` on the `init-study` command.
void add_train_study_command(CLI::App& study, int* rc);

}  // namespace gpt2::app
