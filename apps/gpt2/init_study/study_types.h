#pragma once
// The types every part of `gpt2 init-study` shares, at the bottom of its
// folder: the schemes compared and how pictures show them, the flags of
// both studies, and what one profile (sweep) or one run (train) measured.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "apps/gpt2/plot/svg_page.h"
#include "gpt2/model/config.h"

namespace gpt2::app {

/// The residual schemes every init study compares, GPT-2's first.
inline constexpr ResidualScale kStudySchemes[] = {
    ResidualScale::kTwoPerBlock, ResidualScale::kOnePerBlock, ResidualScale::kNone};

/// How tables and legends name a scheme: "N = 2L", "N = L", "N = 1 (none)".
std::string scheme_label(ResidualScale scheme);

/// The scheme colours of every init picture, in kStudySchemes order (blue
/// N = 2L, green N = L, red none): draw_svg's `series`.
const std::vector<Rgb>& scheme_colors();
/// The cmap0 index of `scheme`'s colour on a page drawn with scheme_colors().
int scheme_color(ResidualScale scheme);

/// One model's numbers at init.
struct InitProfile {
  int64_t n_layer = 0;
  ResidualScale scheme = ResidualScale::kTwoPerBlock;
  /// std of the residual stream after block i (i = 0 .. n_layer-1).
  std::vector<double> residual_std;
  /// std of the logits.
  double logits_std = 0;
  /// Norm of block i's parameter gradients from one backward of the loss.
  std::vector<double> block_grad_norm;
  /// The loss on random tokens (about ln(vocab_size) at init).
  double loss = 0;
};

/// Values of `init-study sweep`.
struct SweepFlags {
  std::vector<int64_t> depths = {12, 24, 36, 48};
  int64_t n_embd = 256;
  int64_t n_head = 4;
  int64_t vocab_size = 50257;
  int64_t batch = 8;
  int64_t seq = 64;
  uint64_t seed = 1337;
  std::string out = ".";
};

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

}  // namespace gpt2::app
