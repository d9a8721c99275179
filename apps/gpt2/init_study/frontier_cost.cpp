#include "apps/gpt2/init_study/frontier_cost.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cstdlib>

#include "apps/gpt2/init_study/frontier_grid.h"

namespace gpt2::app {
namespace {

// The seconds of the full-length rows at `depth`.
std::vector<double> seconds_at(const std::vector<FrontierRun>& rows, int64_t steps,
                               int64_t depth) {
  std::vector<double> s;
  for (const FrontierRun& r : rows) {
    if (r.cell.depth == depth && r.steps == steps) s.push_back(r.seconds);
  }
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool done(const std::vector<FrontierRun>& rows, const FrontierCell& c) {
  return std::any_of(rows.begin(), rows.end(), [&c](const FrontierRun& r) { return r.cell == c; });
}

}  // namespace

double expected_seconds(const std::vector<FrontierRun>& rows, int64_t steps,
                        const FrontierCell& cell) {
  const double here = median(seconds_at(rows, steps, cell.depth));
  if (here > 0) return here;
  int64_t nearest = -1;
  for (const FrontierRun& r : rows) {
    if (r.steps != steps) continue;
    const int64_t d = r.cell.depth;
    if (nearest < 0 || std::llabs(d - cell.depth) < std::llabs(nearest - cell.depth)) nearest = d;
  }
  if (nearest < 0) return 0;
  return median(seconds_at(rows, steps, nearest)) * static_cast<double>(cell.depth + 1) /
         static_cast<double>(nearest + 1);
}

std::vector<FrontierCost> frontier_costs(const FrontierGrid& grid,
                                         const std::vector<FrontierRun>& rows) {
  std::vector<FrontierCost> costs;
  for (int64_t depth : grid.depths) {
    if (std::any_of(costs.begin(), costs.end(), [depth](const FrontierCost& c) { return c.depth == depth; })) {
      continue;
    }
    FrontierCost c;
    c.depth = depth;
    const std::vector<double> s = seconds_at(rows, grid.steps, depth);
    c.measured = static_cast<int64_t>(s.size());
    c.seconds_per_run = median(s);
    for (const FrontierCell& cell : frontier_cells(grid)) {
      if (cell.depth != depth) continue;
      c.cells += 1;
      if (!done(rows, cell)) {
        c.left += 1;
        c.seconds_left += expected_seconds(rows, grid.steps, cell);
      }
    }
    costs.push_back(c);
  }
  return costs;
}

int64_t frontier_calls(const FrontierGrid& grid, const std::vector<FrontierRun>& rows,
                       double time_limit) {
  int64_t calls = 0;
  double used = 0;
  for (const FrontierCell& cell : frontier_cells(grid)) {
    if (done(rows, cell)) continue;
    const double s = expected_seconds(rows, grid.steps, cell);
    if (calls == 0 || (used > 0 && used + s > time_limit)) {
      calls += 1;
      used = 0;
    }
    used += s;
  }
  return calls;
}

void print_frontier_costs(const FrontierGrid& grid, const std::vector<FrontierRun>& rows,
                          std::ostream& out) {
  fmt::print(out, "cost      per depth: the median seconds of the runs that ran all {} steps, "
                  "and what the cells left take at that rate\n", grid.steps);
  fmt::print(out, "  {:>5} {:>8} {:>8} {:>6} {:>6} {:>9}\n", "depth", "measured", "s/run",
             "cells", "left", "s left");
  int64_t cells = 0, left = 0;
  double seconds = 0;
  for (const FrontierCost& c : frontier_costs(grid, rows)) {
    fmt::print(out, "  {:>5} {:>8} {:>8} {:>6} {:>6} {:>9.0f}\n", c.depth, c.measured,
               c.measured > 0 ? fmt::format("{:.1f}", c.seconds_per_run) : "-", c.cells, c.left,
               c.seconds_left);
    cells += c.cells;
    left += c.left;
    seconds += c.seconds_left;
  }
  fmt::print(out, "  {:>5} {:>8} {:>8} {:>6} {:>6} {:>9.0f} ({:.1f} min)\n", "total", "", "",
             cells, left, seconds, seconds / 60);
  if (grid.time_limit > 0) {
    fmt::print(out, "calls     {} of --time-limit {:g} s for the {} cells left\n",
               frontier_calls(grid, rows, grid.time_limit), grid.time_limit, left);
  }
}

}  // namespace gpt2::app
