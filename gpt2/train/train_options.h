#pragma once
/// TrainOptions: nanoGPT's training knobs (batch, accumulation, schedule,
/// AdamW, clipping, evaluation, checkpoints), options-style, with one field
/// table that the command's flags and the checkpoint's record both read.

#include <torch/arg.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpt2/train/schedule.h"

namespace gpt2 {

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

/// One field of the TrainOptions table.
struct TrainField {
  /// Name in files (the checkpoint's record) and in to_string.
  const char* key;
  /// The command's flag without dashes, or nullptr when it has none.
  const char* flag;
  /// One line for --help.
  const char* help;
};

/// Calls `visit(TrainField, value)` for each field of `o` in a fixed order;
/// `value` is a reference to an int64_t, double or uint64_t field.
template <class Options, class Visitor>
void for_each_train_field(Options& o, Visitor&& visit) {
  visit(TrainField{"batch_size", "batch-size", "Sequences per micro-batch"}, o.batch_size());
  visit(TrainField{"grad_accum", "grad-accum", "Micro-batches per optimizer step"}, o.grad_accum());
  visit(TrainField{"max_steps", "max-steps", "Optimizer steps in the run"}, o.max_steps());
  visit(TrainField{"warmup_steps", "warmup-steps", "Linear warm-up steps"}, o.warmup_steps());
  visit(TrainField{"lr_decay_steps", "lr-decay-steps", "Step where the cosine ends (0: max steps)"},
        o.lr_decay_steps());
  visit(TrainField{"lr", "lr", "Peak learning rate"}, o.lr());
  visit(TrainField{"min_lr", "min-lr", "Final learning rate"}, o.min_lr());
  visit(TrainField{"weight_decay", "weight-decay", "AdamW weight decay (matrices only)"},
        o.weight_decay());
  visit(TrainField{"beta1", "beta1", "AdamW beta1"}, o.beta1());
  visit(TrainField{"beta2", "beta2", "AdamW beta2"}, o.beta2());
  visit(TrainField{"grad_clip", "grad-clip", "Gradient-norm clip (0: none)"}, o.grad_clip());
  visit(TrainField{"eval_interval", "eval-interval", "Steps between val evaluations"},
        o.eval_interval());
  visit(TrainField{"eval_steps", "eval-steps", "Batches per evaluation"}, o.eval_steps());
  visit(TrainField{"checkpoint_interval", "checkpoint-interval",
                   "Steps between checkpoints (0: at the end only)"},
        o.checkpoint_interval());
  visit(TrainField{"max_skips", "max-skips", "Non-finite steps in a row that stop the run"},
        o.max_skips());
  visit(TrainField{"seed", nullptr, "Seed of batch order and dropout"}, o.seed());
}

/// Each field's value as text (`{batch_size, "12"}`, `{lr, "0.0006"}`).
std::vector<std::pair<TrainField, std::string>> train_field_texts(const TrainOptions& o);
/// Sets the field `key` from `text` (an integer or a number as
/// train_field_texts writes it). Throws ConfigError naming `shown_as`, the
/// expected form and the text.
void set_train_field(TrainOptions& o, const std::string& key, const std::string& text,
                     const std::string& shown_as);
/// `TrainOptions(batch_size=12, ...)`, every field.
std::string to_string(const TrainOptions& o);

}  // namespace gpt2
