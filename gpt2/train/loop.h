#pragma once
/// The training loop around a Trainer: evaluation and checkpoints on their
/// intervals, the non-finite guard, and a clean stop on request.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "gpt2/train/trainer.h"

namespace gpt2 {

/// Why run_training returned.
enum class RunEnd {
  kFinished,  ///< max_steps reached; checkpoint written.
  kStopped,   ///< stop requested; the step in flight finished, checkpoint written.
  kDiverged,  ///< max_skips non-finite steps in a row; no checkpoint written,
              ///< so the last one on disk is the last good one.
};

/// What the loop reports; any may be empty.
struct RunHooks {
  /// After every step (skipped ones too).
  std::function<void(const StepResult&)> on_step;
  /// After every evaluation: steps done, val loss, whether it is the best.
  std::function<void(int64_t step, double val_loss, bool best)> on_eval;
  /// After every checkpoint: steps done, path, seconds it took.
  std::function<void(int64_t step, const std::string& path, double seconds)> on_checkpoint;
};

/// Trains until options.max_steps() steps are done. Evaluates val at the
/// start of a fresh run, every eval_interval steps and at the end; writes
/// `checkpoint_path` every checkpoint_interval steps and at the end, except
/// after a skipped step. Checks
/// `*stop` after each step: when set, checkpoints and returns kStopped.
/// In a data-parallel run every rank calls this; rank 0 alone writes the
/// checkpoint, and a stop seen by any rank stops all after the same step.
RunEnd run_training(Trainer& trainer, const std::string& checkpoint_path, const RunHooks& hooks,
                    const std::atomic<bool>* stop = nullptr);

}  // namespace gpt2
