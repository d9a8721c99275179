#pragma once
// `gpt2 inspect`: build a model and show its config, counts, runtime, init
// table and tie check; optionally save it.

#include <CLI/App.hpp>

#include <iosfwd>
#include <string>

#include "apps/gpt2/common/model_flags.h"
#include "apps/gpt2/inspect/audit_report.h"
#include "gpt2/model/gpt.h"

namespace gpt2::app {

/// Values of the inspect subcommand's flags.
struct InspectFlags {
  ModelFlags model;
  std::string save_path;
  /// When set, inspect this checkpoint instead of building from the flags.
  std::string checkpoint;
  /// --device: where the built model is checked (cpu, cuda, cuda:N).
  std::string device = "cpu";
  /// --audit-init FILE (with --scheme, --audit-plot): audit that file instead.
  AuditFlags audit;
};

/// Prints `model`'s config, counts, runtime, init table and tie check to
/// `out`. Returns 0 when every check passed, 1 otherwise.
int report(const GPTImpl& model, std::ostream& out);

/// Builds the model `flags` describe, saves it if asked, and prints its
/// report. With a checkpoint: loads it, checks the trained model's tie, and
/// runs the init checks on a fresh model of its config. Returns report()'s
/// code (1 if the loaded model's tie fails too). With --audit-init: run_audit's.
int run_inspect(const InspectFlags& flags, std::ostream& out);

/// Registers `inspect` on `app`; its callback stores the exit code in `*rc`.
void add_inspect_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
