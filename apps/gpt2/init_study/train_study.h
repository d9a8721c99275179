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

#include "apps/gpt2/init_study/study_types.h"
#include "gpt2/model/config.h"
#include "gpt2/train/train_options.h"

namespace gpt2::app {

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
