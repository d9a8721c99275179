#include "gpt2/train/loop.h"

#include <chrono>

namespace gpt2 {
namespace {

void evaluate(Trainer& trainer, const RunHooks& hooks) {
  const double val = trainer.evaluate("val");
  const bool best = trainer.record_val(val);
  if (hooks.on_eval) hooks.on_eval(trainer.steps_done(), val, best);
}

void checkpoint(Trainer& trainer, const std::string& path, const RunHooks& hooks) {
  const DataParallel* dp = trainer.data_parallel();
  if (dp && dp->rank() != 0) return;  // rank 0 alone writes; the weights are the same
  const auto start = std::chrono::steady_clock::now();
  trainer.save(path);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (hooks.on_checkpoint) hooks.on_checkpoint(trainer.steps_done(), path, s);
}

}  // namespace

RunEnd run_training(Trainer& trainer, const std::string& checkpoint_path, const RunHooks& hooks,
                    const std::atomic<bool>* stop) {
  const TrainOptions& o = trainer.options();
  if (trainer.steps_done() == 0) evaluate(trainer, hooks);
  int64_t skips_in_a_row = 0;
  while (trainer.steps_done() < o.max_steps()) {
    const StepResult r = trainer.step();
    if (hooks.on_step) hooks.on_step(r);
    skips_in_a_row = r.skipped ? skips_in_a_row + 1 : 0;
    if (skips_in_a_row >= o.max_skips()) return RunEnd::kDiverged;
    const int64_t done = trainer.steps_done();
    const bool last = done == o.max_steps();
    if (done % o.eval_interval() == 0 || last) evaluate(trainer, hooks);
    bool stopping = stop && stop->load();
    // A signal reaches the ranks at different steps: all stop at the first
    // step after which any rank saw one.
    if (DataParallel* dp = trainer.data_parallel()) stopping = dp->any(stopping);
    // No checkpoint in a streak of skipped steps, so the last one on disk
    // is the last good step's, unless a stop asks for one.
    const bool due = (o.checkpoint_interval() > 0 && done % o.checkpoint_interval() == 0) || last;
    if ((due && !r.skipped) || stopping) {
      checkpoint(trainer, checkpoint_path, hooks);
    }
    if (stopping && !last) return RunEnd::kStopped;
  }
  return RunEnd::kFinished;
}

}  // namespace gpt2
