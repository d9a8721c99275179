#include "apps/gpt2/init_study/init_study_command.h"

#include <CLI/CLI.hpp>

#include "apps/gpt2/init_study/frontier.h"
#ifdef GPT2_WITH_PLOT
#include "apps/gpt2/init_study/sweep.h"
#endif

namespace gpt2::app {

void add_init_study_command(CLI::App& app, int* rc) {
  CLI::App* study = app.add_subcommand(
      "init-study",
      "What GPT-2's residual scale does: depth sweep at init, learning-rate frontier in training");
  study->require_subcommand(1);
#ifdef GPT2_WITH_PLOT  // the sweep's product is its pictures
  add_sweep_command(*study, rc);
#endif
  add_frontier_command(*study, rc);
}

}  // namespace gpt2::app
