#pragma once
// The picture of `gpt2 init-study train`: one panel per learning rate, in
// each the smoothed training loss of every scheme (colour by scheme) with
// its val evaluations as dots and a cross where the NaN guard stopped a run.

#include <string>
#include <vector>

#include "apps/gpt2/init_study/study_types.h"

namespace gpt2::app {

/// Draws `runs` to the SVG file `path` (replaced atomically), titled with
/// `subtitle` under the study's name. Throws FileError when `path` cannot be
/// written.
void plot_study_runs(const std::vector<StudyRun>& runs, const std::string& path,
                     const std::string& subtitle);

}  // namespace gpt2::app
