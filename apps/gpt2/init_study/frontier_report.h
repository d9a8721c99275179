#pragma once
// What `init-study frontier` makes of its rows: per scheme, depth and
// learning rate the seeds' mean and spread, and per scheme and depth the
// best and largest stable learning rates and Wortsman et al.'s LR
// sensitivity ("Small-scale proxies for large-scale Transformer training
// instabilities", 2023).

#include <cstdint>
#include <iosfwd>
#include <vector>

#include "apps/gpt2/init_study/study_types.h"

namespace gpt2::app {

/// The loss a run counts with: its final val clipped at its val at step 0,
/// min(loss, loss at init) as Wortsman et al.; a diverged run counts as
/// its loss at init.
double clipped_loss(const FrontierRun& run);

/// One (scheme, depth, lr) over its seeds.
struct FrontierPoint {
  ResidualScale scheme = ResidualScale::kTwoPerBlock;
  int64_t depth = 0;
  double lr = 0;
  int runs = 0;
  int diverged = 0;
  /// Mean, lowest and highest clipped_loss over the seeds.
  double mean = 0, lo = 0, hi = 0;
};

/// The points of `runs`, in kStudySchemes order, then by depth and lr.
std::vector<FrontierPoint> frontier_points(const std::vector<FrontierRun>& runs);

/// One (scheme, depth) over the learning-rate grid.
struct FrontierSummary {
  ResidualScale scheme = ResidualScale::kTwoPerBlock;
  int64_t depth = 0;
  int runs = 0;
  int diverged = 0;
  /// The lr of the lowest mean clipped loss, and that loss with its seeds' spread.
  double best_lr = 0;
  double best_mean = 0, best_lo = 0, best_hi = 0;
  /// The largest lr that, with every smaller lr of the grid, no seed
  /// diverged at; 0 when the smallest did.
  double largest_stable_lr = 0;
  /// LR sensitivity, one value per seed: the mean over the grid of the
  /// clipped loss minus its lowest; the mean and range over the seeds.
  double sensitivity = 0, sensitivity_lo = 0, sensitivity_hi = 0;
};

/// The summaries of `runs`, in frontier_points' order.
std::vector<FrontierSummary> frontier_summaries(const std::vector<FrontierRun>& runs);

/// The table: a line per scheme and depth (runs, diverged, best lr and its
/// loss, largest stable lr, sensitivity with its range over seeds).
void print_frontier_table(const std::vector<FrontierSummary>& rows, std::ostream& out);

}  // namespace gpt2::app
