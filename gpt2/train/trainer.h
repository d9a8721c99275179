#pragma once
/// One training run's state and its step, as nanoGPT's train.py: AdamW over
/// the deduplicated groups, warm-up + cosine learning rate, gradient
/// accumulation and clipping, evaluation in eval mode without grad. Every
/// random draw is reproducible from the checkpoint, so a resumed run is
/// bit-identical to one that never stopped.

#include <torch/optim/adamw.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "gpt2/io/checkpoint.h"
#include "gpt2/io/nanogpt.h"
#include "gpt2/model/gpt.h"
#include "gpt2/train/distributed.h"
#include "gpt2/train/optim.h"
#include "gpt2/train/token_loader.h"
#include "gpt2/train/train_options.h"

namespace gpt2 {

/// What one optimizer step did.
struct StepResult {
  /// Steps done after this one (1 for the first).
  int64_t step = 0;
  /// Mean training loss over the step's micro-batches.
  double loss = 0;
  /// Global gradient L2 norm before clipping.
  double grad_norm = 0;
  /// Learning rate used.
  double lr = 0;
  /// True when the loss or the norm was not finite: the weights and the
  /// optimizer were left as they were.
  bool skipped = false;
  /// Tokens processed by all ranks (B * T * grad_accum * world size).
  int64_t tokens = 0;
  /// Wall time of the step.
  double seconds = 0;
};

/// The model, optimizer, data and counters of one run.
class Trainer {
 public:
  /// A run over the prepared data in `data_dir` (either layout of
  /// data/data_folder.h: train.bin and val.bin, or token shards). The
  /// model is trained as given; the optimizer is built once, here; torch's
  /// default generator (dropout) is seeded from options.seed().
  ///
  /// With `data_parallel`, this is one rank of a data-parallel run: the
  /// model starts from rank 0's weights (broadcast here), the ranks share
  /// one seeded batch stream of which rank r takes micro-batches
  /// [r * grad_accum, (r + 1) * grad_accum) of each step's
  /// world_size * grad_accum (so a one-process run with grad_accum x
  /// world_size draws the same batches), gradients are averaged before
  /// clipping, evaluation batches are dealt round the ranks, and dropout
  /// draws from seed + rank.
  Trainer(GPT model, const TrainOptions& options, const std::string& data_dir,
          std::shared_ptr<DataParallel> data_parallel = nullptr);

  /// Runs the forward and loss of steps and evaluations under
  /// ops::Autocast(device, dtype), as nanoGPT's `dtype`: torch::kFloat (the
  /// default) or torch::kBFloat16 (torch::kHalf on CUDA). Parameters,
  /// gradients and the optimizer stay float32. Not recorded in checkpoints:
  /// like the device, it is how this machine runs the step. Throws
  /// gpt2::Error for a dtype the model's device cannot autocast to.
  void set_precision(torch::ScalarType dtype);
  torch::ScalarType precision() const { return precision_; }
  /// The device of the model's parameters, where batches are sent.
  const torch::Device& device() const { return device_; }

  /// One optimizer step: grad_accum micro-batches forward and backward in
  /// train mode, clip, AdamW at the scheduled rate; skipped (nothing
  /// updated) when the loss or the norm is not finite.
  StepResult step();
  /// Mean loss over options.eval_steps() batches of "train" or "val" in eval
  /// mode without grad. The batches are the same at every call (a loader
  /// reseeded per call), so evaluations compare and draw nothing from the
  /// training stream.
  double evaluate(const std::string& split);

  /// Writes the checkpoint (model, optimizer, step, loader and torch
  /// generator states, the options as typed attributes, data folder and
  /// best val as JSON), atomically.
  void save(const std::string& path) const;
  /// Continues the run `checkpoint` (read from `path` by load_checkpoint,
  /// whose model this trainer trains) saved: optimizer state, step,
  /// generator states, best val. Throws CheckpointError if anything does
  /// not fit.
  void restore(const Checkpoint& checkpoint, const std::string& path);
  /// Continues a nanoGPT run (read from `path` by load_nanogpt with its
  /// optimizer, whose model this trainer trains): AdamW state by name and
  /// shape (restore_nanogpt_optimizer), step = iter_num, best val.
  /// nanoGPT's batch order (numpy's random draws) does not carry over: the
  /// batches come from this run's seed, and dropout from a seed of the step.
  void restore(const NanoGPTCheckpoint& checkpoint, const std::string& path);

  /// Records a val loss; returns whether it is the best so far.
  bool record_val(double loss);

  /// Steps done.
  int64_t steps_done() const { return step_; }
  /// Lowest val loss recorded, and after how many steps (-1: none yet).
  double best_val_loss() const { return best_val_; }
  int64_t best_val_step() const { return best_val_step_; }
  /// The options in force.
  const TrainOptions& options() const { return options_; }
  /// The prepared-data folder.
  const std::string& data_dir() const { return data_dir_; }
  /// The process group of a data-parallel run, or nullptr.
  DataParallel* data_parallel() const { return dp_.get(); }

  /// The model being trained.
  GPT model;
  /// For tests: maps each micro-batch's loss before backward (inject a NaN).
  std::function<torch::Tensor(int64_t step, const torch::Tensor& loss)> loss_hook;

 private:
  TrainOptions options_;
  std::string data_dir_;
  LrSchedule schedule_;
  std::unique_ptr<FusedAdamW> optimizer_;
  std::vector<torch::Tensor> params_;  // unique parameters, for clipping
  std::unique_ptr<BatchSource> train_, eval_train_, eval_val_;
  int64_t step_ = 0;
  double best_val_ = std::numeric_limits<double>::infinity();
  int64_t best_val_step_ = -1;
  std::shared_ptr<DataParallel> dp_;
  torch::Device device_;
  torch::ScalarType precision_ = torch::kFloat;
};

/// The TrainOptions, data folder and best val a checkpoint written by
/// Trainer::save records. Throws CheckpointError for a checkpoint without
/// that record (one not written by a Trainer).
struct TrainRecord {
  /// Options of the saved run.
  TrainOptions options;
  /// Its data folder.
  std::string data_dir;
  /// The training source's position beyond its generator (BatchSource::
  /// position; empty for nanoGPT's layout and older checkpoints).
  std::string data_position;
  /// Best val loss and its step (-1: none).
  double best_val_loss = std::numeric_limits<double>::infinity();
  int64_t best_val_step = -1;
};
/// Reads the record Trainer::save wrote into `checkpoint` (the options from
/// Checkpoint::train_options, or from `extra` in files written before
/// those); `path` names the file in errors.
TrainRecord parse_train_record(const Checkpoint& checkpoint, const std::string& path);

}  // namespace gpt2
