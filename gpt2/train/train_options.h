#pragma once
/// TrainOptions: nanoGPT's training knobs (batch, accumulation, schedule,
/// AdamW, clipping, evaluation, checkpoints), options-style, with its field
/// table (the mechanism GPTConfig's uses too, gpt2/fields/table.h).

#include <torch/arg.h>

#include <cstdint>
#include <string>

#include "gpt2/fields/table.h"

namespace gpt2 {

/// nanoGPT's learning-rate schedule: linear warm-up, then cosine decay to
/// min_lr, then min_lr.
struct LrSchedule {
  /// Peak rate, reached at the end of warm-up.
  TORCH_ARG(double, lr) = 6e-4;
  /// Floor of the cosine, kept after decay_steps.
  TORCH_ARG(double, min_lr) = 6e-5;
  /// Steps of linear warm-up.
  TORCH_ARG(int64_t, warmup_steps) = 2000;
  /// Step at which the cosine reaches min_lr (nanoGPT's lr_decay_iters).
  TORCH_ARG(int64_t, decay_steps) = 600000;

 public:
  /// The rate for 0-based step `it`, as nanoGPT's get_lr: lr * (it + 1) /
  /// (warmup + 1) during warm-up, then min_lr + (lr - min_lr) * (1 + cos(pi
  /// * r)) / 2 with r the fraction of the decay done, min_lr after it.
  double at(int64_t it) const;
};

/// How to train. Defaults are nanoGPT's train.py (GPT-2 124M on OpenWebText)
/// where it has one; the `gpt2 train` presets change them.
struct TrainOptions {
  /// Sequences per micro-batch (B); T is the model's block_size.
  TORCH_ARG(int64_t, batch_size) = 12;
  /// Micro-batches whose gradients add up to one optimizer step.
  TORCH_ARG(int64_t, grad_accum) = 40;
  /// Optimizer steps in the whole run (a resumed run counts from 0 too).
  TORCH_ARG(int64_t, max_steps) = 600000;
  /// Linear warm-up steps of the learning rate.
  TORCH_ARG(int64_t, warmup_steps) = 2000;
  /// Step at which the cosine reaches min_lr; 0 means max_steps.
  TORCH_ARG(int64_t, lr_decay_steps) = 0;
  /// Peak learning rate.
  TORCH_ARG(double, lr) = 6e-4;
  /// Final learning rate.
  TORCH_ARG(double, min_lr) = 6e-5;
  /// AdamW weight decay, on the dim >= 2 group only.
  TORCH_ARG(double, weight_decay) = 0.1;
  /// AdamW beta1.
  TORCH_ARG(double, beta1) = 0.9;
  /// AdamW beta2.
  TORCH_ARG(double, beta2) = 0.95;
  /// Clip the global gradient norm to this; 0 reports it without clipping.
  TORCH_ARG(double, grad_clip) = 1.0;
  /// Evaluate on val every this many steps (and at the start and end).
  TORCH_ARG(int64_t, eval_interval) = 2000;
  /// Batches per evaluation.
  TORCH_ARG(int64_t, eval_steps) = 200;
  /// Write the checkpoint every this many steps (and at the end); 0: end only.
  TORCH_ARG(int64_t, checkpoint_interval) = 2000;
  /// Non-finite steps in a row that stop the run.
  TORCH_ARG(int64_t, max_skips) = 5;
  /// Seed of the batch order (and of dropout, via torch's default generator).
  TORCH_ARG(uint64_t, seed) = 1337;

 public:
  /// The learning-rate schedule these options describe.
  LrSchedule schedule() const;
  /// Tokens per optimizer step for a model of block size `block_size`.
  int64_t tokens_per_step(int64_t block_size) const {
    return batch_size_ * grad_accum_ * block_size;
  }
  /// Throws ConfigError naming the first field out of range.
  void validate() const;
};

/// The table's name in messages and to_string.
inline const char* table_name(const TrainOptions&) { return "TrainOptions"; }

/// The field table (see gpt2/fields/fields.h): calls `visit(Field, value)`
/// for each field of `o` in a fixed order; `value` is a reference to an
/// int64_t, double or uint64_t field. The command's flags, the checkpoint's
/// record and to_string read it.
template <class Options, class Visitor>
TableVisit<Options, TrainOptions> for_each_field(Options& o, Visitor&& visit) {
  visit(Field{"batch_size", "batch-size", "Sequences per micro-batch"}, o.batch_size());
  visit(Field{"grad_accum", "grad-accum", "Micro-batches per optimizer step"}, o.grad_accum());
  visit(Field{"max_steps", "max-steps", "Optimizer steps in the run"}, o.max_steps());
  visit(Field{"warmup_steps", "warmup-steps", "Linear warm-up steps"}, o.warmup_steps());
  visit(Field{"lr_decay_steps", "lr-decay-steps", "Step where the cosine ends (0: max steps)"},
        o.lr_decay_steps());
  visit(Field{"lr", "lr", "Peak learning rate"}, o.lr());
  visit(Field{"min_lr", "min-lr", "Final learning rate"}, o.min_lr());
  visit(Field{"weight_decay", "weight-decay", "AdamW weight decay (matrices only)"},
        o.weight_decay());
  visit(Field{"beta1", "beta1", "AdamW beta1"}, o.beta1());
  visit(Field{"beta2", "beta2", "AdamW beta2"}, o.beta2());
  visit(Field{"grad_clip", "grad-clip", "Gradient-norm clip (0: none)"}, o.grad_clip());
  visit(Field{"eval_interval", "eval-interval", "Steps between val evaluations"},
        o.eval_interval());
  visit(Field{"eval_steps", "eval-steps", "Batches per evaluation"}, o.eval_steps());
  visit(Field{"checkpoint_interval", "checkpoint-interval",
              "Steps between checkpoints (0: at the end only)"},
        o.checkpoint_interval());
  visit(Field{"max_skips", "max-skips", "Non-finite steps in a row that stop the run"},
        o.max_skips());
  // No flag: the command seeds the run from the model's --seed.
  visit(Field{"seed", nullptr, "Seed of batch order and dropout"}, o.seed());
}

/// `TrainOptions(batch_size=12, ...)`, every field.
std::string to_string(const TrainOptions& o);

}  // namespace gpt2
