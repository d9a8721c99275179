#pragma once
// `gpt2 plot LOG.csv`: draw a run's loss curve from its CSV log.

#include <CLI/App.hpp>

#include <iosfwd>
#include <string>

namespace gpt2::app {

/// Values of the plot subcommand's flags.
struct PlotFlags {
  /// The run's log.csv.
  std::string log;
  /// The SVG to write; empty: loss.svg beside the log.
  std::string out;
};

/// Reads the log, draws it, prints the path. Returns 0; bad input throws gpt2::Error.
int run_plot(const PlotFlags& flags, std::ostream& out);

/// Registers `plot` on `app`; its callback stores the exit code in `*rc`.
void add_plot_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
