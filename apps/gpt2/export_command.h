#pragma once
// `gpt2 export`: write a model as a TorchScript program that C++ (plain
// LibTorch) and Python load with torch::jit::load / torch.jit.load.

#include <CLI/App.hpp>

#include <iosfwd>
#include <string>

#include "apps/gpt2/common/model_flags.h"

namespace gpt2::app {

/// Values of the export subcommand's flags.
struct ExportFlags {
  ModelFlags model;
  /// When set, the model comes from this file (any format load_model reads)
  /// instead of the model flags.
  std::string checkpoint;
  std::string out;
};

/// Builds or loads the model, exports it to flags.out, prints what it did.
/// Returns 0; bad input throws gpt2::Error.
int run_export(const ExportFlags& flags, std::ostream& out);

/// Registers `export` on `app`; its callback stores the exit code in `*rc`.
void add_export_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
