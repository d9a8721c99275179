#pragma once
// `gpt2 init-study`: what GPT-2's residual scale does, measured: `sweep`
// (sweep.h) at init, `frontier` (frontier.h) through training.

#include <CLI/App.hpp>

namespace gpt2::app {

/// Registers `init-study frontier` on `app`, and `init-study sweep` where
/// the build draws pictures (GPT2_WITH_PLOT).
void add_init_study_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
