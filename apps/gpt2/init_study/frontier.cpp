#include "apps/gpt2/init_study/frontier.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/gpt2/common/progress.h"
#include "gpt2/runtime/runtime.h"
#include "apps/gpt2/common/shipped_corpus.h"
#include "apps/gpt2/init_study/frontier_csv.h"
#include "apps/gpt2/init_study/frontier_plot.h"
#include "apps/gpt2/init_study/frontier_report.h"
#include "apps/gpt2/init_study/frontier_run.h"
#include "gpt2/error.h"
#include "gpt2/file/output_dir.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/train/dataset.h"

namespace gpt2::app {
namespace {

void require_positive(int64_t value, const char* flag) {
  if (value <= 0) throw ConfigError(fmt::format("{} must be positive, got {}", flag, value));
}

template <class T>
void require_some(const std::vector<T>& values, const char* flag) {
  if (values.empty()) throw ConfigError(fmt::format("{} names no value", flag));
}

// "AMD EPYC": the machine the figures come from, as /proc/cpuinfo names it.
std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      return line.substr(line.find(':') + 2);
    }
  }
  return "unknown CPU";
}

// A run's cost is about proportional to its blocks plus one for the
// embeddings, the head and the evaluations: the ETA's weights.
double cost(const FrontierCell& c) { return static_cast<double>(c.depth + 1); }

std::string describe(const FrontierCell& c) {
  return fmt::format("{:<4} depth {:>2} lr {:<6g} seed {}", to_string(c.scheme), c.depth, c.lr,
                     c.seed);
}

void report(const std::vector<FrontierRun>& rows, const FrontierGrid& g, std::ostream& out) {
  const std::filesystem::path dir(g.out);
  const std::vector<FrontierSummary> summaries = frontier_summaries(rows);
  std::ostringstream table;
  fmt::print(table, "frontier  {} runs of n_embd {}, batch {} x {} chars, {} steps (from {})\n",
             rows.size(), g.n_embd, g.batch_size, g.block_size, g.steps,
             (dir / "frontier.csv").string());
  print_frontier_table(summaries, table);
  out << table.str();
  const std::string text = (dir / "frontier_table.txt").string();
  write_file_atomically(text, table.str());
  const std::string subtitle = fmt::format("{} runs, n_embd {}, {} steps of {} x {} chars, {}",
                                           rows.size(), g.n_embd, g.steps, g.batch_size,
                                           g.block_size, cpu_name());
  const std::string loss = (dir / "frontier_loss.svg").string();
  const std::string lrs = (dir / "frontier_lr.svg").string();
  plot_frontier_loss(frontier_points(rows), loss, subtitle);
  plot_frontier_lrs(summaries, lrs, subtitle);
  fmt::print(out, "wrote     {}, {}, {}\n", text, loss, lrs);
}

}  // namespace

std::vector<std::string> frontier_profile_names() { return {"full", "smoke"}; }

FrontierGrid frontier_profile(const std::string& name) {
  FrontierGrid g;
  g.schemes.assign(std::begin(kStudySchemes), std::end(kStudySchemes));
  if (name == "full") {
    // Sized in docs/init.md ("Cost"): 336 runs, a few hours on 2 cores.
    g.depths = {4, 8, 16, 32};
    g.lrs = {1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1};
    g.seeds = {1, 2, 3};
    g.n_embd = 64;
    g.n_head = 4;
    g.block_size = 64;
    g.batch_size = 16;
    g.steps = 250;
    g.warmup_steps = 25;
    g.eval_interval = 50;
    g.eval_steps = 8;
  } else if (name == "smoke") {
    // For the test suite: 24 runs in seconds, every part of the command.
    g.depths = {2, 4};
    g.lrs = {1e-3, 1e-2, 1e-1};
    g.seeds = {1};
    g.n_embd = 32;
    g.n_head = 2;
    g.block_size = 32;
    g.batch_size = 8;
    g.steps = 24;
    g.warmup_steps = 4;
    g.eval_interval = 12;
    g.eval_steps = 2;
  } else {
    throw ConfigError(fmt::format("unknown frontier profile '{}'; known: {}", name,
                                  fmt::join(frontier_profile_names(), ", ")));
  }
  return g;
}

void validate(const FrontierGrid& g) {
  require_some(g.schemes, "--schemes");
  require_some(g.depths, "--depths");
  require_some(g.lrs, "--lrs");
  require_some(g.seeds, "--seeds");
  for (int64_t d : g.depths) require_positive(d, "--depths");
  for (double lr : g.lrs) {
    if (!(lr > 0) || !std::isfinite(lr)) {
      throw ConfigError(fmt::format("--lrs must be positive, finite learning rates, got {}", lr));
    }
  }
  require_positive(g.n_embd, "--n-embd");
  require_positive(g.n_head, "--n-head");
  require_positive(g.block_size, "--block-size");
  require_positive(g.batch_size, "--batch-size");
  require_positive(g.steps, "--steps");
  // A bound a person can mean: a million steps of the smallest model is a
  // day per run here, and the grid has hundreds.
  if (g.steps > 1'000'000) {
    throw ConfigError(fmt::format("--steps must be at most 1000000 per run, got {}", g.steps));
  }
  require_positive(g.eval_interval, "--eval-interval");
  require_positive(g.eval_steps, "--eval-steps");
  if (g.warmup_steps < 0 || g.warmup_steps > g.steps) {
    throw ConfigError(fmt::format("--warmup-steps must be in [0, --steps {}], got {}", g.steps,
                                  g.warmup_steps));
  }
  // The shape's and the recipe's own rules, with a stand-in vocabulary: the
  // data's is only known once it is prepared.
  for (const FrontierCell& c : frontier_cells(g)) {
    frontier_model(g, 65, c).validate();
    frontier_options(g, c).validate();
  }
}

std::vector<FrontierCell> frontier_cells(const FrontierGrid& g) {
  std::vector<FrontierCell> cells;
  for (uint64_t seed : g.seeds) {
    for (int64_t depth : g.depths) {
      for (double lr : g.lrs) {
        for (ResidualScale scheme : g.schemes) {
          const FrontierCell c{scheme, depth, lr, seed};
          if (std::find(cells.begin(), cells.end(), c) == cells.end()) cells.push_back(c);
        }
      }
    }
  }
  return cells;
}

std::vector<FrontierRun> run_frontier(const FrontierGrid& g, std::ostream& out) {
  validate(g);
  // Given data is read before OUT is made, so a wrong --data leaves nothing behind.
  if (!g.data.empty()) read_dataset_meta(g.data);
  const std::filesystem::path dir(g.out);
  make_output_dir(g.out, "study folder (--out)");
  const FolderLock lock(g.out);  // one grid at a time appends to its CSV
  const std::string data =
      g.data.empty() ? prepare_shipped_corpus((dir / "data-char").string(), "char", out) : g.data;
  const int64_t vocab = read_dataset_meta(data).vocab_size;
  check_or_record_settings((dir / "frontier_grid.txt").string(), frontier_settings(g, vocab));
  const std::string csv = (dir / "frontier.csv").string();
  std::vector<FrontierRun> rows = read_frontier_csv(csv, out);
  std::vector<FrontierCell> left;
  for (const FrontierCell& c : frontier_cells(g)) {
    const auto done = [&c](const FrontierRun& r) { return r.cell == c; };
    if (std::none_of(rows.begin(), rows.end(), done)) left.push_back(c);
  }
  const FrontierCell first = frontier_cells(g).front();
  fmt::print(out, "model     {} (n_layer, init_residual, init_seed per run)\n",
             to_string(frontier_model(g, vocab, first)));
  fmt::print(out, "training  {} (lr, min_lr = lr/10, seed per run)\n",
             to_string(frontier_options(g, first)));
  std::vector<std::string> schemes;
  for (ResidualScale s : g.schemes) schemes.push_back(to_string(s));
  fmt::print(out, "grid      schemes {}, depths {}, lrs {}, seeds {}: {} runs, {} in {} already, "
             "{} to run\n", fmt::join(schemes, ","), fmt::join(g.depths, ","),
             fmt::join(g.lrs, ","), fmt::join(g.seeds, ","), frontier_cells(g).size(),
             frontier_cells(g).size() - left.size(), csv, left.size());
  fmt::print(out, "runtime   {}, {}\n", runtime_line(runtime_info()), cpu_name());
  out.flush();
  double cost_left = 0, cost_done = 0, seconds = 0;
  for (const FrontierCell& c : left) cost_left += cost(c);
  for (size_t i = 0; i < left.size(); ++i) {
    const FrontierRun run = train_cell(g, left[i], data);
    append_frontier_row(csv, run);
    rows.push_back(run);
    cost_left -= cost(left[i]);
    cost_done += cost(left[i]);
    seconds += run.seconds;
    fmt::print(out, "  {:>3}/{} {}: val {:.3f} -> {:.3f}{} {:>6}  | {} left, ETA {}\n", i + 1,
               left.size(), describe(run.cell), run.start_val, run.final_val,
               run.diverged ? " diverged" : "", format_duration(run.seconds),
               left.size() - i - 1, format_duration(seconds / cost_done * cost_left));
    out.flush();
  }
  if (!rows.empty()) report(rows, g, out);
  return rows;
}

}  // namespace gpt2::app
