#pragma once
// What a person watches during `gpt2 train`: one live line on a terminal
// (step/total, loss, lr, grad norm, tokens/s, ETA), plain lines otherwise,
// and a line per evaluation, checkpoint and skipped step.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "gpt2/train/trainer.h"

namespace gpt2::app {

/// A duration as a person reads it: "42s", "3m07s", "1h05m"; "?" when unknown.
std::string format_duration(double seconds);

/// Prints progress to a C stream.
class Progress {
 public:
  /// `live`: rewrite one line in place (a terminal); otherwise print a plain
  /// line every `every` steps. `first_step` is the step the run starts after.
  Progress(std::FILE* out, bool live, int64_t max_steps, int64_t first_step, int64_t every);

  /// After each step.
  void step(const StepResult& r);
  /// After each evaluation.
  void eval(int64_t step, double val_loss, bool best);
  /// After each checkpoint.
  void checkpoint(int64_t step, const std::string& path, double seconds);
  /// Ends the live line.
  void finish();

 private:
  void line(const std::string& text);  // a permanent line, after any live one
  std::FILE* out_;
  bool live_;
  bool live_shown_ = false;
  int64_t max_steps_, first_step_, every_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace gpt2::app
