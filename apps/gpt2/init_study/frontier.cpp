#include "apps/gpt2/init_study/frontier.h"

#include <ATen/Context.h>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "apps/gpt2/common/model_flags.h"
#include "apps/gpt2/common/progress.h"
#include "apps/gpt2/common/shipped_corpus.h"
#include "apps/gpt2/init_study/frontier_cost.h"
#include "apps/gpt2/init_study/frontier_csv.h"
#include "apps/gpt2/init_study/frontier_report.h"
#include "apps/gpt2/init_study/frontier_run.h"
#include "gpt2/error.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/file/output_dir.h"
#include "gpt2/runtime/device_line.h"
#include "gpt2/runtime/runtime.h"
#include "gpt2/train/dataset.h"
#ifdef GPT2_WITH_PLOT
#include "apps/gpt2/init_study/frontier_plot.h"
#endif

namespace gpt2::app {
namespace {

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

#ifdef GPT2_WITH_PLOT
// Where the pictures say the rows ran: the CPU's model for a CPU grid in
// float32, else the device and dtype (the rows may come from several
// GPUs); the clip unless it is the recipe's 1.
std::string machine(const FrontierGrid& g) {
  std::string m = g.device == "cpu" && g.dtype == "float32"
                      ? cpu_name()
                      : fmt::format("{}, {}", g.device, g.dtype);
  if (g.clip != 1.0) m += g.clip == 0 ? ", no clipping" : fmt::format(", clip {:g}", g.clip);
  return m;
}
#endif

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
#ifdef GPT2_WITH_PLOT
  const std::string subtitle = fmt::format("{} runs, n_embd {}, {} steps of {} x {} chars, {}",
                                           rows.size(), g.n_embd, g.steps, g.batch_size,
                                           g.block_size, machine(g));
  const std::string loss = (dir / "frontier_loss.svg").string();
  const std::string lrs = (dir / "frontier_lr.svg").string();
  plot_frontier_loss(frontier_points(rows), loss, subtitle);
  plot_frontier_lrs(summaries, lrs, subtitle);
  fmt::print(out, "wrote     {}, {}, {}\n", text, loss, lrs);
#else
  fmt::print(out, "wrote     {}; no pictures (built without PLplot: the same flags with --report, "
                  "on a build with it, draw them from the CSV)\n", text);
#endif
}

// The cells of the grid (or, for the cost probe, each depth's first) that
// the CSV lacks.
std::vector<FrontierCell> cells_left(const FrontierGrid& g, const std::vector<FrontierRun>& rows) {
  std::vector<FrontierCell> left;
  std::vector<int64_t> depths_seen;
  for (const FrontierCell& c : frontier_cells(g)) {
    if (g.cost_probe) {
      if (std::find(depths_seen.begin(), depths_seen.end(), c.depth) != depths_seen.end()) continue;
      depths_seen.push_back(c.depth);
    }
    const auto done = [&c](const FrontierRun& r) { return r.cell == c; };
    if (std::none_of(rows.begin(), rows.end(), done)) left.push_back(c);
  }
  return left;
}

void print_start(const FrontierGrid& g, int64_t vocab, const std::vector<FrontierRun>& rows,
                 size_t left, const std::string& csv, std::ostream& out) {
  const FrontierCell first = frontier_cells(g).front();
  const GPTConfig model = frontier_model(g, vocab, first);
  fmt::print(out, "model     {} (n_layer, init_residual, init_seed per run)\n", to_string(model));
  fmt::print(out, "training  {} (lr, min_lr = lr/10, seed per run)\n",
             to_string(frontier_options(g, first)));
  std::vector<std::string> schemes;
  for (ResidualScale s : g.schemes) schemes.push_back(to_string(s));
  const size_t cells = frontier_cells(g).size();
  const auto in_grid = [&g](const FrontierRun& r) {
    const std::vector<FrontierCell> all = frontier_cells(g);
    return std::find(all.begin(), all.end(), r.cell) != all.end();
  };
  const auto done = static_cast<size_t>(std::count_if(rows.begin(), rows.end(), in_grid));
  fmt::print(out, "grid      schemes {}, depths {}, lrs {}, seeds {}: {} runs, {} in {} already, "
             "{} to run{}\n", fmt::join(schemes, ","), fmt::join(g.depths, ","),
             fmt::join(g.lrs, ","), fmt::join(g.seeds, ","), cells, done, csv, left,
             g.cost_probe ? " (the cost probe: each depth's first cell)"
                          : g.report_only ? " (--report runs none)" : "");
  fmt::print(out, "runtime   {}, {}\n", runtime_line(runtime_info()), cpu_name());
  if (g.report_only) return;
  const torch::Device device = device_from_flag(g.device);
  const torch::ScalarType dtype = dtype_from_flag(g.dtype);
  const std::string precision =
      g.dtype == "float32" ? "throughout" : "autocast (weights, gradients, AdamW in float32)";
  if (device.is_cuda()) {
    fmt::print(out, "device    {}\n",
               device_line(device, dtype, precision, model, g.batch_size, g.block_size));
  } else if (g.dtype != "float32") {
    fmt::print(out, "device    {}, {} {}\n", device.str(), g.dtype, precision);
  }
}

}  // namespace

std::vector<FrontierRun> run_frontier(const FrontierGrid& g, std::ostream& out) {
  validate(g);
  // Runs need their device, named and present, before anything is written.
  if (!g.report_only && device_from_flag(g.device).is_cuda()) {
    at::globalContext().setFloat32MatmulPrecision("high");  // as `gpt2 train`: TF32 probes
  }
  // Given data is read before OUT is made, so a wrong --data leaves nothing behind.
  if (!g.data.empty()) read_dataset_meta(g.data);
  const std::filesystem::path dir(g.out);
  const std::string csv = (dir / "frontier.csv").string();
  if (g.report_only && !std::filesystem::exists(csv)) {
    throw FileError(fmt::format("--report: no '{}' to report on: run the grid first", csv));
  }
  make_output_dir(g.out, "study folder (--out)");
  const FolderLock lock(g.out);  // one grid at a time appends to its CSV
  const std::string data =
      g.data.empty() ? prepare_shipped_corpus((dir / "data-char").string(), "char", out) : g.data;
  const int64_t vocab = read_dataset_meta(data).vocab_size;
  check_or_record_settings((dir / "frontier_grid.txt").string(), frontier_settings(g, vocab));
  bool current_columns = true;
  std::vector<FrontierRun> rows = read_frontier_csv(csv, out, &current_columns);
  std::vector<FrontierCell> left = cells_left(g, rows);
  if (!current_columns && !g.report_only && !left.empty()) {
    throw InputError(fmt::format("'{}' has the columns of an earlier version (no best_val): "
                                 "--report reads it; run the {} cells left into another --out",
                                 csv, left.size()));
  }
  print_start(g, vocab, rows, left.size(), csv, out);
  if (g.report_only) left.clear();
  out.flush();
  const auto began = std::chrono::steady_clock::now();
  double cost_left = 0, cost_done = 0, seconds = 0;
  for (const FrontierCell& c : left) cost_left += cost(c);
  for (size_t i = 0; i < left.size(); ++i) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    const double next = expected_seconds(rows, g.steps, left[i]);
    if (g.time_limit > 0 && i > 0 && elapsed + next > g.time_limit) {
      fmt::print(out, "stopped   at --time-limit {:g} s after {} runs in {}: the next ({}) takes "
                 "about {}; {} runs left, which the same command runs\n", g.time_limit, i,
                 format_duration(elapsed), describe(left[i]), format_duration(next),
                 left.size() - i);
      break;
    }
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
  if (g.cost_probe) {
    std::ostringstream table;
    print_frontier_costs(g, rows, table);
    out << table.str();
    const std::string path = (dir / "frontier_cost.txt").string();
    write_file_atomically(path, table.str());
    fmt::print(out, "wrote     {}\n", path);
  } else if (!rows.empty()) {
    report(rows, g, out);
  }
  return rows;
}

}  // namespace gpt2::app
