#pragma once
// What `gpt2 init-study train` reports: a table on the terminal, a CSV row
// per run, a CSV row per step and evaluation, and the loss-curve picture.

#include <cstdint>
#include <iosfwd>
#include <utility>
#include <vector>

#include "apps/gpt2/init_study/study_types.h"

namespace gpt2::app {

/// The last val loss of a run and after how many steps (NaN, -1: none).
std::pair<int64_t, double> last_val(const StudyRun& run);

/// One line per run: scheme, lr, finished or diverged, steps, skipped, the
/// first step's loss, the last val loss and its step, time.
void print_study_table(const std::vector<StudyRun>& runs, std::ostream& out);

/// Writes OUT/init_train.csv, OUT/init_train_curves.csv and
/// OUT/init_train.svg (each replaced atomically) and names them on `out`.
/// `shape` (any scheme) titles the picture.
void write_study_files(const std::vector<StudyRun>& runs, const TrainStudyFlags& flags,
                       const GPTConfig& shape, std::ostream& out);

}  // namespace gpt2::app
