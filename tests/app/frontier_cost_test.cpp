// What a frontier grid costs and how an invocation is cut: the cost table's
// arithmetic on hand-made rows, --time-limit stopping before a run and the
// same command continuing, the cost probe (each depth's first cell), and
// --report, which runs nothing. No test here times anything: the seconds
// are hand-made, or any time limit is far below a run's.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "apps/gpt2/init_study/frontier.h"
#include "apps/gpt2/init_study/frontier_cost.h"
#include "app/frontier_grids.h"
#include "gpt2/error.h"
#include "gpt2/file/read_file.h"
#include "test_util.h"

namespace gpt2::app {
namespace {

FrontierRun timed(int64_t depth, double lr, int64_t steps, double seconds) {
  FrontierRun r;
  r.cell = {ResidualScale::kTwoPerBlock, depth, lr, 1};
  r.steps = steps;
  r.seconds = seconds;
  return r;
}

// Depth 12's full runs took 4 and 6 s (median 5; the diverged one, stopped
// at step 30, does not count), depth 24's one took 10 s, depth 48 has none
// and is scaled from 24: 10 x 49 / 25 = 19.6 s.
TEST(FrontierCost, ProjectsTheCellsLeftFromEachDepthsMedian) {
  FrontierGrid g = frontier_profile("gpt2-gpu");
  g.schemes = {ResidualScale::kTwoPerBlock};
  g.lrs = {1e-3, 1e-2, 1e-1};
  g.seeds = {1};
  const std::vector<FrontierRun> rows = {timed(12, 1e-3, 120, 4), timed(12, 1e-2, 120, 6),
                                         timed(12, 1e-1, 30, 100), timed(24, 1e-3, 120, 10)};
  EXPECT_DOUBLE_EQ(expected_seconds(rows, 120, {ResidualScale::kZero, 12, 1, 1}), 5);
  EXPECT_DOUBLE_EQ(expected_seconds(rows, 120, {ResidualScale::kZero, 48, 1, 1}), 19.6);
  EXPECT_DOUBLE_EQ(expected_seconds({}, 120, {ResidualScale::kZero, 48, 1, 1}), 0);
  const std::vector<FrontierCost> costs = frontier_costs(g, rows);
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_EQ(costs[0].measured, 2);
  EXPECT_DOUBLE_EQ(costs[0].seconds_per_run, 5);
  EXPECT_EQ(costs[0].cells, 3);
  EXPECT_EQ(costs[0].left, 0);
  EXPECT_EQ(costs[1].left, 2);
  EXPECT_DOUBLE_EQ(costs[1].seconds_left, 20);
  EXPECT_EQ(costs[2].measured, 0);
  EXPECT_DOUBLE_EQ(costs[2].seconds_left, 3 * 19.6);
  // Left, in order: 10, 10, 19.6, 19.6, 19.6 s. In calls of 40 s: 10 + 10
  // + 19.6 = 39.6, then 39.2: two. Of 30 s: 20, 19.6, 19.6, 19.6: four.
  EXPECT_EQ(frontier_calls(g, rows, 40), 2);
  EXPECT_EQ(frontier_calls(g, rows, 30), 4);
  EXPECT_EQ(frontier_calls(g, rows, 5), 5);  // a run longer than a call is a call of its own
  g.time_limit = 40;
  std::ostringstream table;
  print_frontier_costs(g, rows, table);
  EXPECT_NE(table.str().find("total"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("(1.3 min)"), std::string::npos) << table.str();  // 78.8 s
  EXPECT_NE(table.str().find("calls     2 of --time-limit 40 s for the 5 cells left"),
            std::string::npos) << table.str();
}

// Two schemes at two depths, one rate and seed: 4 cells.
FrontierGrid small(const std::string& out) {
  FrontierGrid g = testing::one_cell(out);
  g.schemes = {ResidualScale::kTwoPerBlock, ResidualScale::kZero};
  g.depths = {1, 2};
  return g;
}

// A limit below any run's time: the first run starts (nothing else would
// ever run), the next is expected past the limit and does not; the same
// command without the limit runs the other three.
TEST(FrontierTimeLimit, StopsBeforeARunThatWouldEndPastItAndTheSameCommandContinues) {
  testing::TempDir dir;
  FrontierGrid g = small(dir / "out");
  g.time_limit = 1e-6;
  std::ostringstream first;
  EXPECT_EQ(run_frontier(g, first).size(), 1u) << first.str();
  EXPECT_NE(first.str().find("stopped   at --time-limit 1e-06 s after 1 runs"), std::string::npos)
      << first.str();
  EXPECT_NE(first.str().find("3 runs left, which the same command runs"), std::string::npos);
  g.time_limit = 0;
  std::ostringstream second;
  EXPECT_EQ(run_frontier(g, second).size(), 4u) << second.str();
  EXPECT_NE(second.str().find("1 in "), std::string::npos) << second.str();
  EXPECT_NE(second.str().find("3 to run"), std::string::npos) << second.str();
}

// The cost probe runs each depth's first cell (2n at its depth), writes
// the cost table and no report; run again it runs nothing. --report then
// reports those rows and runs nothing; on a folder without a CSV it is
// refused and makes nothing.
TEST(FrontierCostProbe, RunsEachDepthsFirstCellThenReportRunsNothing) {
  testing::TempDir dir;
  FrontierGrid g = small(dir / "out");
  g.cost_probe = true;
  std::ostringstream first;
  const std::vector<FrontierRun> rows = run_frontier(g, first);
  ASSERT_EQ(rows.size(), 2u) << first.str();
  EXPECT_EQ(rows[0].cell, (FrontierCell{ResidualScale::kTwoPerBlock, 1, 1e-2, 1}));
  EXPECT_EQ(rows[1].cell, (FrontierCell{ResidualScale::kTwoPerBlock, 2, 1e-2, 1}));
  EXPECT_NE(first.str().find("2 to run (the cost probe"), std::string::npos) << first.str();
  const std::string cost = read_file(dir / "out/frontier_cost.txt", "cost");
  EXPECT_NE(cost.find("total"), std::string::npos) << cost;
  EXPECT_FALSE(std::filesystem::exists(dir / "out/frontier_table.txt"));
  std::ostringstream again;
  EXPECT_EQ(run_frontier(g, again).size(), 2u);
  EXPECT_NE(again.str().find("0 to run"), std::string::npos) << again.str();

  g.cost_probe = false;
  g.report_only = true;
  std::ostringstream report;
  EXPECT_EQ(run_frontier(g, report).size(), 2u) << report.str();
  EXPECT_NE(report.str().find("2 in "), std::string::npos) << report.str();
  EXPECT_NE(report.str().find("2 to run"), std::string::npos);  // left by the grid, not run
  EXPECT_TRUE(std::filesystem::exists(dir / "out/frontier_table.txt"));
  g.out = dir / "none";
  const std::string e = testing::file_error_of([&] { run_frontier(g, report); });
  EXPECT_NE(e.find("--report: no '" + (dir / "none/frontier.csv") + "'"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(dir / "none"));
}

}  // namespace
}  // namespace gpt2::app
