#pragma once
// `gpt2 init-study frontier`: for each residual scheme and depth, the
// learning rates at which a char-level model trains, over a grid of peak
// learning rates and seeds (Wortsman et al. 2023's method), on the CPU or
// a GPU. Runs a grid in pieces: each finished run is a row of
// OUT/frontier.csv, and a second invocation with the same OUT skips the
// rows it finds.

#include <CLI/App.hpp>

#include <iosfwd>
#include <vector>

#include "apps/gpt2/init_study/frontier_grid.h"
#include "apps/gpt2/init_study/study_types.h"

namespace gpt2::app {

/// Runs the cells of `grid` that OUT/frontier.csv does not hold yet (with
/// grid.cost_probe, only each depth's first; with grid.report_only, none),
/// a progress line each (runs done, left, ETA), starting none that
/// grid.time_limit would cut. Then prints the table and writes
/// OUT/frontier_table.txt and the pictures from every row of the CSV, or,
/// for the cost probe, OUT/frontier_cost.txt. Validates `grid` and looks
/// for its device before anything is written; refuses (ConfigError) an
/// OUT whose recorded settings differ. Returns every row.
std::vector<FrontierRun> run_frontier(const FrontierGrid& grid, std::ostream& out);

/// Registers `frontier` on the `init-study` command.
void add_frontier_command(CLI::App& study, int* rc);

}  // namespace gpt2::app
