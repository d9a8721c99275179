#include "apps/gpt2/init_study/frontier_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include "apps/gpt2/common/model_flags.h"
#include "apps/gpt2/common/train_presets.h"
#include "apps/gpt2/init_study/frontier_probe.h"
#include "gpt2/model/gpt.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/token_loader.h"
#include "gpt2/train/trainer.h"

namespace gpt2::app {
namespace {

// The val batches' seed, apart from the training stream's (cell.seed).
constexpr uint64_t kValSeedOffset = 2;

std::vector<Batch> val_batches(const FrontierGrid& grid, const FrontierCell& cell,
                               const std::string& data_dir, const torch::Device& device) {
  TokenLoader loader(std::make_shared<const TokenFile>(data_dir + "/val.bin"), grid.batch_size,
                     grid.block_size, cell.seed + kValSeedOffset);
  std::vector<Batch> batches;
  for (int64_t i = 0; i < grid.eval_steps; ++i) {
    const Batch b = loader.next();  // the loader's buffers: copied before the next draw
    batches.push_back({b.x.clone().to(device), b.y.clone().to(device)});
  }
  return batches;
}

}  // namespace

GPTConfig frontier_model(const FrontierGrid& grid, int64_t vocab_size, const FrontierCell& cell) {
  return train_preset("nano").model.n_layer(cell.depth).n_embd(grid.n_embd).n_head(grid.n_head)
      .block_size(grid.block_size).vocab_size(vocab_size)
      .init(InitOptions().seed(cell.seed).residual(cell.scheme));
}

TrainOptions frontier_options(const FrontierGrid& grid, const FrontierCell& cell) {
  return train_preset("nano").train.batch_size(grid.batch_size).grad_accum(1)
      .max_steps(grid.steps).warmup_steps(grid.warmup_steps).lr(cell.lr).min_lr(cell.lr / 10)
      .beta1(0.9).beta2(0.95).grad_clip(grid.clip).eval_interval(grid.eval_interval)
      .eval_steps(grid.eval_steps).checkpoint_interval(0).seed(cell.seed);
}

bool frontier_diverged(double start_val, double best_val, double final_val, bool stopped) {
  return stopped || !std::isfinite(final_val) || final_val > start_val ||
         final_val - best_val > (start_val - best_val) / 4;
}

FrontierRun train_cell(const FrontierGrid& grid, const FrontierCell& cell,
                       const std::string& data_dir, const LossHook& loss_hook) {
  const auto start = std::chrono::steady_clock::now();
  const torch::Device device = device_from_flag(grid.device);
  const std::vector<Batch> val = val_batches(grid, cell, data_dir, device);
  // Drawn on the CPU, as every run of the seed draws it, then moved.
  GPT model(frontier_model(grid, read_dataset_meta(data_dir).vocab_size, cell));
  model->to(device);
  // The trainer's step, driven here rather than by run_training: the study
  // probes at each evaluation and writes no checkpoint.
  Trainer trainer(std::move(model), frontier_options(grid, cell), data_dir);
  trainer.set_precision(dtype_from_flag(grid.dtype));
  trainer.loss_hook = loss_hook;
  const TrainOptions& o = trainer.options();
  FrontierRun run;
  run.cell = cell;
  const auto measure = [&](bool first) {
    const Probe p = probe(*trainer.model, val);
    if (first) run.start_val = p.loss, run.rms_start = p.rms, run.best_val = p.loss;
    run.final_val = p.loss;
    if (p.loss < run.best_val) run.best_val = p.loss;  // never NaN
    run.rms_end = p.rms;
    run.max_attn_logit =
        first ? p.max_attn_logit : larger_logit(run.max_attn_logit, p.max_attn_logit);
  };
  measure(true);
  int64_t skips_in_a_row = 0;
  bool stopped = false;
  while (trainer.steps_done() < o.max_steps() && !stopped) {
    const StepResult r = trainer.step();
    if (r.skipped) {
      run.skipped += 1;
      if (run.first_skip < 0) run.first_skip = r.step;
    } else {
      run.max_grad_norm = std::max(run.max_grad_norm, r.grad_norm);
    }
    skips_in_a_row = r.skipped ? skips_in_a_row + 1 : 0;
    stopped = skips_in_a_row >= o.max_skips();
    if (stopped || r.step % o.eval_interval() == 0 || r.step == o.max_steps()) measure(false);
  }
  run.steps = trainer.steps_done();
  run.diverged = frontier_diverged(run.start_val, run.best_val, run.final_val, stopped);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace gpt2::app
