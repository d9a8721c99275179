#include "apps/gpt2/plot/plot_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "apps/gpt2/plot/loss_plot.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/train/train_log.h"

namespace gpt2::app {

int run_plot(const PlotFlags& flags, std::ostream& out) {
  const std::string path =
      flags.out.empty()
          ? (std::filesystem::path(flags.log).parent_path() / "loss.svg").string()
          : flags.out;
  refuse_writing_over_inputs(path, {{flags.log, "the log plotted"}});
  const std::vector<LogRow> rows = read_log(flags.log);
  plot_losses(rows, path, fmt::format("{}", flags.log));
  size_t train = 0, val = 0;
  for (const auto& r : rows) (r.split == "val" ? val : train) += 1;
  fmt::print(out, "plotted   {} ({} step rows, {} val rows from {})\n", path, train, val, flags.log);
  return 0;
}

void add_plot_command(CLI::App& app, int* rc) {
  auto flags = std::make_shared<PlotFlags>();
  CLI::App* cmd = app.add_subcommand("plot", "Draw a run's loss curve (SVG) from its log.csv");
  cmd->add_option("log", flags->log, "The run's log.csv")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", flags->out, "SVG file to write (default: loss.svg beside the log)");
  cmd->callback([flags, rc] { *rc = run_plot(*flags, std::cout); });
}

}  // namespace gpt2::app
