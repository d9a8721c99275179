#pragma once
// What a frontier grid costs, from the seconds its own rows took: what
// `init-study frontier --cost-probe` prints after running one cell per
// depth, and what --time-limit predicts the next run by.

#include <cstdint>
#include <iosfwd>
#include <vector>

#include "apps/gpt2/init_study/study_types.h"

namespace gpt2::app {

/// The seconds `cell` is expected to take: the median of the rows at its
/// depth that ran every step (a diverged run stops early), else the
/// nearest measured depth's scaled by (depth + 1) / (its depth + 1) (a run
/// costs about its blocks plus one for the embeddings, head and
/// evaluations); 0 when `rows` has no full run.
double expected_seconds(const std::vector<FrontierRun>& rows, int64_t steps,
                        const FrontierCell& cell);

/// One depth of a grid's cost table.
struct FrontierCost {
  int64_t depth = 0;
  /// Full-length rows at this depth, and their median seconds (0: none).
  int64_t measured = 0;
  double seconds_per_run = 0;
  /// The grid's cells at this depth, those not in `rows`, and the seconds
  /// those are expected to take (expected_seconds).
  int64_t cells = 0, left = 0;
  double seconds_left = 0;
};

/// A row per depth of `grid`, in its order.
std::vector<FrontierCost> frontier_costs(const FrontierGrid& grid,
                                         const std::vector<FrontierRun>& rows);

/// How many invocations of `time_limit` seconds the cells of `grid` not
/// in `rows` take, cut as --time-limit cuts them (in the grid's order, a
/// run starting only when it is expected to end in time; one that alone
/// exceeds the limit is a call of its own); 0 when none is left.
int64_t frontier_calls(const FrontierGrid& grid, const std::vector<FrontierRun>& rows,
                       double time_limit);

/// The table: a line per depth (runs measured, seconds per run, cells,
/// left, seconds left), the totals, and the calls of grid.time_limit.
void print_frontier_costs(const FrontierGrid& grid, const std::vector<FrontierRun>& rows,
                          std::ostream& out);

}  // namespace gpt2::app
