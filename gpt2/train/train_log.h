#pragma once
/// The run's CSV log, DIR/log.csv: one row per optimizer step ("train", or
/// "skipped" for a non-finite step) and one per evaluation ("val"). A
/// resumed run keeps the rows up to its checkpoint and appends, so one file
/// holds the whole run.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "gpt2/train/trainer.h"

namespace gpt2 {

/// The header row.
inline constexpr const char* kLogHeader = "step,split,loss,lr,grad_norm,tokens_per_s,step_s";

/// One row; a field the row's kind has no value for is NaN (empty in the file).
struct LogRow {
  /// Steps done when the row was written.
  int64_t step = 0;
  /// "train", "skipped" or "val".
  std::string split;
  /// Mean training loss of the step, or the val loss.
  double loss = 0;
  /// Learning rate of the step.
  double lr = 0;
  /// Gradient norm before clipping.
  double grad_norm = 0;
  /// Training throughput of the step.
  double tokens_per_s = 0;
  /// Wall time of the step.
  double step_s = 0;
};

/// Appends rows to a log file, flushing each so the file is complete up to
/// any checkpoint written after it.
class TrainLog {
 public:
  /// A fresh log at `path` (header only), or, with `resume_step`, the
  /// existing one cut to its rows with step <= resume_step (the file is
  /// created if missing). Throws FileError naming the path.
  TrainLog(const std::string& path, std::optional<int64_t> resume_step = std::nullopt);
  ~TrainLog();
  TrainLog(const TrainLog&) = delete;
  TrainLog& operator=(const TrainLog&) = delete;

  /// A "train" or "skipped" row.
  void step(const StepResult& r);
  /// A "val" row.
  void eval(int64_t step, double val_loss);

 private:
  void write(const std::string& line);
  std::string path_;
  std::FILE* file_ = nullptr;
};

/// The rows of a log file. Throws FileError naming the path and line for a
/// missing file, a wrong header or a malformed row.
std::vector<LogRow> read_log(const std::string& path);

}  // namespace gpt2
