#pragma once
// `gpt2 inspect`: build a model and show its config, counts, runtime, init
// table and tie check; optionally save it.

#include <CLI/App.hpp>

#include <iosfwd>
#include <string>

#include "apps/gpt2/model_flags.h"

namespace gpt2::app {

/// Values of the inspect subcommand's flags.
struct InspectFlags {
  ModelFlags model;
  std::string save_path;
};

/// Builds the model `flags` describe, prints the report to `out` and saves
/// it if asked. Returns 0 when every check passed, 1 otherwise.
int run_inspect(const InspectFlags& flags, std::ostream& out);

/// Registers `inspect` on `app`; its callback stores the exit code in `*rc`.
void add_inspect_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
