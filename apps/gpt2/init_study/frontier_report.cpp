#include "apps/gpt2/init_study/frontier_report.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <tuple>

namespace gpt2::app {
namespace {

int scheme_rank(ResidualScale s) {
  return static_cast<int>(std::find(std::begin(kStudySchemes), std::end(kStudySchemes), s) -
                          std::begin(kStudySchemes));
}

using PointKey = std::tuple<int, int64_t, double>;  // scheme rank, depth, lr

// "lo .. hi" of a spread over seeds, or the value alone for one seed.
std::string spread(double lo, double hi) {
  return lo == hi ? fmt::format("{:.3f}", lo) : fmt::format("{:.3f}..{:.3f}", lo, hi);
}

}  // namespace

double clipped_loss(const FrontierRun& run) {
  if (run.diverged || !std::isfinite(run.final_val)) return run.start_val;
  return std::min(run.final_val, run.start_val);
}

std::vector<FrontierPoint> frontier_points(const std::vector<FrontierRun>& runs) {
  std::map<PointKey, FrontierPoint> points;
  for (const FrontierRun& r : runs) {
    FrontierPoint& p = points[{scheme_rank(r.cell.scheme), r.cell.depth, r.cell.lr}];
    const double loss = clipped_loss(r);
    p.scheme = r.cell.scheme;
    p.depth = r.cell.depth;
    p.lr = r.cell.lr;
    p.lo = p.runs == 0 ? loss : std::min(p.lo, loss);
    p.hi = p.runs == 0 ? loss : std::max(p.hi, loss);
    p.mean += loss;
    p.runs += 1;
    p.diverged += r.diverged ? 1 : 0;
  }
  std::vector<FrontierPoint> out;
  for (auto& [key, p] : points) {
    p.mean /= p.runs;
    out.push_back(p);
  }
  return out;
}

std::vector<FrontierSummary> frontier_summaries(const std::vector<FrontierRun>& runs) {
  std::vector<FrontierSummary> out;
  const std::vector<FrontierPoint> points = frontier_points(runs);
  for (size_t begin = 0; begin < points.size();) {
    size_t end = begin;  // [begin, end): one scheme and depth, lr ascending
    while (end < points.size() && points[end].scheme == points[begin].scheme &&
           points[end].depth == points[begin].depth) {
      ++end;
    }
    FrontierSummary s;
    s.scheme = points[begin].scheme;
    s.depth = points[begin].depth;
    bool stable = true;
    for (size_t i = begin; i < end; ++i) {
      const FrontierPoint& p = points[i];
      s.runs += p.runs;
      s.diverged += p.diverged;
      stable = stable && p.diverged == 0;
      if (stable) s.largest_stable_lr = p.lr;
      if (i == begin || p.mean < s.best_mean) {
        s.best_lr = p.lr, s.best_mean = p.mean, s.best_lo = p.lo, s.best_hi = p.hi;
      }
    }
    // Sensitivity per seed, over the learning rates that seed has.
    std::map<uint64_t, std::vector<double>> by_seed;
    for (const FrontierRun& r : runs) {
      if (r.cell.scheme == s.scheme && r.cell.depth == s.depth) {
        by_seed[r.cell.seed].push_back(clipped_loss(r));
      }
    }
    bool first = true;
    for (const auto& [seed, losses] : by_seed) {
      double sum = 0;
      for (double l : losses) sum += l;
      const double e = sum / losses.size() - *std::min_element(losses.begin(), losses.end());
      s.sensitivity += e / by_seed.size();
      s.sensitivity_lo = first ? e : std::min(s.sensitivity_lo, e);
      s.sensitivity_hi = first ? e : std::max(s.sensitivity_hi, e);
      first = false;
    }
    out.push_back(s);
    begin = end;
  }
  return out;
}

void print_frontier_table(const std::vector<FrontierSummary>& rows, std::ostream& out) {
  fmt::print(out, "  {:<13} {:>5} {:>5} {:>8} {:>8} {:>20} {:>12} {:>8} {:>14}\n", "scheme",
             "depth", "runs", "diverged", "best lr", "best val (seeds)", "stable to lr",
             "LR sens", "sens (seeds)");
  for (const FrontierSummary& s : rows) {
    fmt::print(out, "  {:<13} {:>5} {:>5} {:>8} {:>8g} {:>20} {:>12} {:>8.3f} {:>14}\n",
               scheme_label(s.scheme), s.depth, s.runs, s.diverged, s.best_lr,
               fmt::format("{:.3f} ({})", s.best_mean, spread(s.best_lo, s.best_hi)),
               s.largest_stable_lr > 0 ? fmt::format("{:g}", s.largest_stable_lr) : "none",
               s.sensitivity, spread(s.sensitivity_lo, s.sensitivity_hi));
  }
}

}  // namespace gpt2::app
