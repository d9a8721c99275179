#pragma once
// The types every part of `gpt2 init-study` shares, at the bottom of its
// folder: the schemes compared and how pictures show them, the flags of
// both studies, and what one profile (sweep) or one run (frontier) measured.

#include <cstdint>
#include <string>
#include <vector>

#include "apps/gpt2/plot/svg_page.h"
#include "gpt2/model/config.h"

namespace gpt2::app {

/// The residual schemes the init studies compare, GPT-2's first (the sweep
/// leaves out kZero: kSweepSchemes).
inline constexpr ResidualScale kStudySchemes[] = {
    ResidualScale::kTwoPerBlock, ResidualScale::kOnePerBlock, ResidualScale::kNone,
    ResidualScale::kZero};

/// How tables and legends name a scheme: "N = 2L", "N = L", "N = 1 (none)", "zero".
std::string scheme_label(ResidualScale scheme);

/// The scheme colours of every init picture, in kStudySchemes order (blue
/// N = 2L, green N = L, red none, purple zero): draw_svg's `series`.
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

/// The grid of `init-study frontier` and the settings every run shares. A
/// run is one cell (scheme, depth, lr, seed); everything else is the same
/// in every run and recorded beside the CSV, so the pieces of one grid,
/// run on different days, append to one file.
struct FrontierGrid {
  std::vector<ResidualScale> schemes;
  std::vector<int64_t> depths;
  /// Peak learning rates.
  std::vector<double> lrs;
  /// Seeds of the init, the batch order and the val batches.
  std::vector<uint64_t> seeds;
  int64_t n_embd = 0;
  int64_t n_head = 0;
  /// Tokens per sequence (T).
  int64_t block_size = 0;
  /// Sequences per step (B).
  int64_t batch_size = 0;
  /// Optimizer steps per run.
  int64_t steps = 0;
  /// Linear warm-up steps before the cosine.
  int64_t warmup_steps = 0;
  /// Steps between val evaluations (and at the start and end).
  int64_t eval_interval = 0;
  /// Val batches per evaluation.
  int64_t eval_steps = 0;
  /// Gradient-norm clip; 0: none (`--clip off`).
  double clip = 1.0;
  /// Where the runs train (`cpu`, `cuda`, `cuda:N`) and the precision of
  /// their products (`float32`, or `bfloat16` autocast): the train
  /// command's --device and --dtype. The grid records the device's kind.
  std::string device = "cpu";
  std::string dtype = "float32";
  /// Prepared char-level data; empty: the shipped corpus, prepared into OUT/data-char.
  std::string data;
  /// Folder of frontier.csv, its settings, the table and the pictures.
  std::string out = ".";

  // How one invocation runs; not recorded.
  /// Seconds after which no run starts that would end past them (the time
  /// the finished runs took per block predicts the next); 0: no limit.
  double time_limit = 0;
  /// Run only the grid's first cell of each depth, then print and write
  /// the cost table (frontier_cost.h) instead of the report.
  bool cost_probe = false;
  /// Run nothing: the report (table, pictures) from the CSV's rows alone.
  bool report_only = false;
};

/// One point of the grid.
struct FrontierCell {
  ResidualScale scheme = ResidualScale::kTwoPerBlock;
  int64_t depth = 0;
  double lr = 0;
  uint64_t seed = 0;
  bool operator==(const FrontierCell& o) const {
    return scheme == o.scheme && depth == o.depth && lr == o.lr && seed == o.seed;
  }
};

/// What one finished run measured: a row of frontier.csv.
struct FrontierRun {
  FrontierCell cell;
  /// Steps done (skipped ones included); below the grid's when the guard stopped it.
  int64_t steps = 0;
  /// Val loss at step 0 (about ln(vocab)) and after the last step.
  double start_val = 0;
  double final_val = 0;
  /// The lowest val loss at any evaluation, step 0's included.
  double best_val = 0;
  /// frontier_diverged(): the guard stopped it, or its final val is not
  /// finite, above start_val, or gave back more than a quarter of its gain.
  bool diverged = false;
  /// Steps skipped by the non-finite guard, and the first of them (1-based; -1: none).
  int64_t skipped = 0;
  int64_t first_skip = -1;
  /// Largest finite global gradient norm before clipping.
  double max_grad_norm = 0;
  /// RMS of the residual stream after the last block, on the val batches,
  /// at step 0 and at the end.
  double rms_start = 0;
  double rms_end = 0;
  /// Largest pre-softmax attention logit q.k/sqrt(head size) over every
  /// block, head and evaluation.
  double max_attn_logit = 0;
  /// Wall time of the run.
  double seconds = 0;
};

}  // namespace gpt2::app
