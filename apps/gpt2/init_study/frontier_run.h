#pragma once
// One run of `init-study frontier`: a char-level model of one cell of the
// grid trained by the nano recipe's schedule, measured at step 0, at every
// evaluation and at the end.

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "apps/gpt2/init_study/study_types.h"
#include "gpt2/model/config.h"
#include "gpt2/train/train_options.h"

namespace gpt2::app {

/// The model of `cell`: the nano preset's (dropout 0, GPT-2's GELU and
/// biases) with the grid's width, heads and block, `cell.depth` blocks, the
/// data's vocabulary, and `cell.scheme` seeded from `cell.seed`.
GPTConfig frontier_model(const FrontierGrid& grid, int64_t vocab_size, const FrontierCell& cell);
/// The recipe of `cell`: the nano preset's schedule (warm-up, cosine to
/// lr / 10) with AdamW betas 0.9 / 0.95, the grid's clip, batch, steps and
/// warm-up, peak rate `cell.lr`, seed `cell.seed`, no checkpoints.
TrainOptions frontier_options(const FrontierGrid& grid, const FrontierCell& cell);

/// Maps a micro-batch's loss before backward (steps done, loss); tests use
/// it to make a run diverge.
using LossHook = std::function<torch::Tensor(int64_t, const torch::Tensor&)>;

/// Whether a run with these losses stopped training: the guard stopped it
/// (`stopped`), or its final val is not finite, above start_val, or above
/// its best val by more than a quarter of what it had gained
/// (final - best > (start - best) / 4). The last catches what bfloat16
/// makes of a blow-up: float32's exponent range keeps the loss finite, and
/// a model that lost what it learned can settle below the loss at init.
/// A run that never gained gives nothing back: it has not diverged.
bool frontier_diverged(double start_val, double best_val, double final_val, bool stopped);

/// Trains `cell` on the prepared data in `data_dir`, on grid.device with
/// grid.dtype's autocast (the model drawn on the CPU, then moved). The
/// probes run in float32. The val batches
/// (grid.eval_steps of them, drawn from val.bin by cell.seed) are the same
/// for every run of one seed; they are probed (loss, stream RMS, attention
/// logits) at step 0, every grid.eval_interval steps and at the end. The
/// trainer's guard rule stops a run after max_skips non-finite steps in a
/// row; it is then probed once more. diverged is frontier_diverged's.
FrontierRun train_cell(const FrontierGrid& grid, const FrontierCell& cell,
                       const std::string& data_dir, const LossHook& loss_hook = {});

}  // namespace gpt2::app
