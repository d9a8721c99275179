#include "apps/gpt2/init_study/init_study_command.h"

#include <CLI/CLI.hpp>

#include "apps/gpt2/init_study/sweep.h"
#include "apps/gpt2/init_study/train_study.h"

namespace gpt2::app {

void add_init_study_command(CLI::App& app, int* rc) {
  CLI::App* study = app.add_subcommand(
      "init-study", "What GPT-2's residual scale does: depth sweep at init, training ablation");
  study->require_subcommand(1);
  add_sweep_command(*study, rc);
  add_train_study_command(*study, rc);
}

}  // namespace gpt2::app
