#pragma once
// `gpt2 init-study frontier`: for each residual scheme and depth, the
// learning rates at which a small char-level model trains, over a grid of
// peak learning rates and seeds (Wortsman et al. 2023's method). Runs a
// grid in pieces: each finished run is a row of OUT/frontier.csv, and a
// second invocation with the same OUT skips the rows it finds.

#include <CLI/App.hpp>

#include <iosfwd>
#include <string>
#include <vector>

#include "apps/gpt2/init_study/study_types.h"

namespace gpt2::app {

/// The names frontier_profile() knows: "full" (the default grid) and "smoke".
std::vector<std::string> frontier_profile_names();
/// The grid called `name`; ConfigError naming the known profiles otherwise.
FrontierGrid frontier_profile(const std::string& name);

/// Throws ConfigError naming the first setting out of range and its value.
void validate(const FrontierGrid& grid);

/// Every cell of `grid`, seed-major, then depth, lr and scheme: a piece cut
/// anywhere holds whole seeds first and compares schemes pairwise.
std::vector<FrontierCell> frontier_cells(const FrontierGrid& grid);

/// Runs the cells of `grid` that OUT/frontier.csv does not hold yet, a
/// progress line each (runs done, left, ETA), then prints the table and
/// writes OUT/frontier_table.txt and the pictures from every row of the CSV.
/// Validates `grid` before anything is written; refuses (ConfigError) an
/// OUT whose recorded settings differ. Returns every row.
std::vector<FrontierRun> run_frontier(const FrontierGrid& grid, std::ostream& out);

/// Registers `frontier` on the `init-study` command.
void add_frontier_command(CLI::App& study, int* rc);

}  // namespace gpt2::app
