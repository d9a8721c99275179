#include "apps/gpt2/bench/bench_train.h"

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <torch/nn/utils/clip_grad.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <memory>
#include <vector>

#include "gpt2/runtime/runtime.h"
#include "apps/gpt2/bench/bench_stats.h"
#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/common/train_presets.h"
#include "apps/bench/step_phases.h"
#include "gpt2/error.h"
#include "gpt2/model/gpt.h"
#include "gpt2/ops/ops.h"
#include "gpt2/ops/settings.h"
#include "gpt2/train/optim.h"

namespace gpt2::app {
namespace {

using Clock = std::chrono::steady_clock;
using Phases = std::map<std::string, double>;  // phase -> median seconds
const char* const kPhases[] = {"zero_grad", "forward", "backward", "clip", "optimizer", "total"};


double max_rss_bytes() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss * 1024.0;
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Float32 FLOP/s of a 2048^2 product, median of 5 after one to warm up:
// through torch::mm (the system BLAS) or ops::linear on `backend`.
double matmul_peak(std::optional<MatmulBackend> backend) {
  torch::NoGradGuard no_grad;
  const BackendChoice saved = matmul_backend_choice();
  if (backend) set_matmul_backend(*backend);
  auto a = torch::randn({2048, 2048}), b = torch::randn({2048, 2048});
  std::vector<double> rates;
  for (int i = 0; i < 6; ++i) {
    const auto t = Clock::now();
    auto c = backend ? ops::linear(a, b, {}) : torch::mm(a, b);
    const double s = since(t);
    if (i > 0) rates.push_back(2.0 * 2048 * 2048 * 2048 / s);
  }
  if (saved.forced) set_matmul_backend(saved.backend);
  else reset_matmul_backend();
  return median(rates);
}

Phases cpp_step(const GPTConfig& config, const BenchTrainFlags& f) {
  torch::manual_seed(0);
  GPT model(config);
  model->train();
  auto opt = configure_optimizers(
      *model, torch::optim::AdamWOptions(6e-4).betas({0.9, 0.95}).weight_decay(0.1));
  auto x = torch::randint(config.vocab_size(), {f.batch, f.seq});
  auto y = torch::randint(config.vocab_size(), {f.batch, f.seq});
  // As Trainer::step: the clip's scaling folded into the optimizer's step.
  const auto params = model->unique_parameters();
  return bench::time_steps(
      *model, *opt, [&] { opt->zero_grad(); }, [&] { opt->clip_grad_norm(params, 1.0); }, x,
      y, f.warmup, f.steps);
}

// One run of a side in its own process: the peer or the default-settings app.
struct PeerRun {
  Phases phases;
  double peak_rss = 0;
  std::string blas_core, runtime;
};

PeerRun external_step(const std::string& command, const std::string& skip_flag) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw FileError(fmt::format("cannot run {}", command));
  std::string text;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) text.append(buffer, n);
  if (::pclose(pipe) != 0 || text.empty()) {
    throw FileError(fmt::format("{} failed; {} skips it", command, skip_flag));
  }
  const auto json = nlohmann::json::parse(text);
  PeerRun run;
  for (const char* phase : kPhases) run.phases[phase] = json.at(phase).get<double>();
  run.peak_rss = json.at("peak_rss").get<double>();
  run.blas_core = json.value("blas_core", "?");
  run.runtime = json.value("runtime", "");
  return run;
}

using Samples = std::map<std::string, std::vector<double>>;  // phase -> one per round

// A side run in its own process each round.
struct Side {
  std::string name;
  std::string command;
  std::string about;
  bool python = true;
  Samples samples;
  PeerRun last;
};

std::string config_args(const GPTConfig& c, const BenchTrainFlags& f) {
  return fmt::format("{} {} {} {} {} {} {} {} {}", c.n_layer(), c.n_head(), c.n_embd(),
                     c.vocab_size(), c.block_size(), f.batch, f.seq, f.steps, f.warmup);
}

std::vector<Side> external_sides(const GPTConfig& config, const BenchTrainFlags& f, int threads,
                                 const RuntimeInfo& rt) {
  std::vector<Side> sides;
  const std::string args = config_args(config, f);
  if (!f.no_app) {
    sides.push_back({"app", fmt::format("'{}' {}", GPT2_APP_STEP, args),
                     "a linking app, default settings (apps/bench/app_step.cpp)", false, {}, {}});
    sides.push_back({"app+config", fmt::format("'{}' {} configure", GPT2_APP_STEP, args),
                     "the same app after gpt2::configure_runtime()", false, {}, {}});
  }
  if (f.no_peer) return sides;
  std::vector<int> peer_threads = f.peer_threads;
  if (peer_threads.empty()) peer_threads.push_back(0);
  for (int& t : peer_threads) t = t > 0 ? t : threads;
  const auto python = [&](int t, const std::string& core) {
    return fmt::format("{}/usr/bin/python3 '{}' {} {}",
                       core.empty() ? "" : "OPENBLAS_CORETYPE=" + core + " ", GPT2_PEER_SCRIPT,
                       args, t);
  };
  for (int t : peer_threads) {
    const std::string name = peer_threads.size() > 1 ? fmt::format("Py t{}", t) : "Python";
    sides.push_back({name, python(t, ""), fmt::format("{} torch threads, OpenBLAS as the "
                     "environment gives it", t), true, {}, {}});
  }
  const std::string core = f.peer_blas_core == "auto" ? better_blas_core(rt) : f.peer_blas_core;
  if (!core.empty() && core != "none") {
    sides.push_back({"Python*", python(peer_threads.front(), core),
                     fmt::format("{} torch threads, OPENBLAS_CORETYPE={}", peer_threads.front(),
                                 core), true, {}, {}});
  }
  return sides;
}

}  // namespace

int run_bench_train(const BenchTrainFlags& f, std::ostream& out) {
  const GPTConfig config = train_preset(f.preset).model;  // the real shapes, wpe included
  const int threads = f.threads > 0 ? f.threads : default_threads();
  set_compute_threads(threads);
  if (f.matmul != "auto") {
    set_matmul_backend(f.matmul == "torch" ? MatmulBackend::kTorch : MatmulBackend::kOneDnn);
  }
  const bool kept = keep_freed_memory();  // as `gpt2 train` runs
  const RuntimeInfo rt = runtime_info();
  const double blas_peak = matmul_peak(std::nullopt);
  const double dnn_peak = onednn_available() ? matmul_peak(MatmulBackend::kOneDnn) : 0;
  const double best_peak = std::max(blas_peak, dnn_peak);
  std::vector<Side> sides = external_sides(config, f, threads, rt);
  Samples cpp;
  double first_rss = 0;  // one model's, as a `gpt2 train` process holds one
  for (int r = 0; r < f.rounds; ++r) {  // alternating, so drift hits every side
    for (const auto& [phase, s] : cpp_step(config, f)) cpp[phase].push_back(s);
    if (r == 0) first_rss = max_rss_bytes();
    for (Side& side : sides) {
      side.last = external_step(side.command, side.python ? "--no-peer" : "--no-app");
      for (const auto& [phase, s] : side.last.phases) side.samples[phase].push_back(s);
    }
  }
  const double tokens = static_cast<double>(f.batch * f.seq);
  // nanoGPT's estimate: 6 N per token for the matmuls of forward and
  // backward, plus 12 L T C for attention.
  const double n = static_cast<double>(config.num_parameters(/*non_embedding=*/true));
  const double flops = tokens * (6 * n + 12.0 * config.n_layer() * f.seq * config.n_embd());
  fmt::print(out, "bench     {} preset, B {} T {}, AdamW (nanoGPT groups), median of {} steps after "
                  "{} warm-up, {} rounds\n", f.preset, f.batch, f.seq, f.steps, f.warmup, f.rounds);
  fmt::print(out, "C++       as `gpt2 train` runs: {}; {}; the clip's scaling in the optimizer's "
                  "step\n", runtime_line(rt),
             kept ? "freed memory kept in the heap" : "MALLOC_* from the environment");
  fmt::print(out, "peak      float32 2048^2 product: torch::mm (BLAS) {:.1f} GFLOP/s, oneDNN {:.1f} "
                  "GFLOP/s\n", blas_peak / 1e9, dnn_peak / 1e9);
  for (const Side& side : sides) {
    fmt::print(out, "{:<10} {}{}\n", side.name, side.about,
               side.last.runtime.empty() ? "" : ": " + side.last.runtime);
  }
  fmt::print(out, "  {:<12} {:>10}", "phase ms", "C++");
  for (const Side& side : sides) fmt::print(out, " {:>10}", side.name);
  fmt::print(out, "\n");
  for (const char* phase : kPhases) {
    fmt::print(out, "  {:<12} {:>10.1f}", phase, 1000 * median(cpp[phase]));
    for (const Side& side : sides) fmt::print(out, " {:>10.1f}", 1000 * median(side.samples.at(phase)));
    fmt::print(out, "\n");
  }
  const double total = median(cpp["total"]);
  fmt::print(out, "C++       {:.0f} tokens/s, {:.1f} GFLOP/s = {:.0f}% of the better product peak, "
                  "peak RSS {:.2f} GB after the first round ({:.2f} GB after all {}: each builds "
                  "a model)\n", tokens / total, flops / total / 1e9, 100 * flops / total / best_peak,
             first_rss / 1e9, max_rss_bytes() / 1e9, f.rounds);
  const Side* fastest = nullptr;  // the Python side at its fastest setting
  for (const Side& side : sides) {
    const double p = median(side.samples.at("total"));
    fmt::print(out, "{:<10} {:.0f} tokens/s, peak RSS {:.2f} GB\n", side.name, tokens / p,
               side.last.peak_rss / 1e9);
    if (side.python && (!fastest || p < median(fastest->samples.at("total")))) fastest = &side;
  }
  if (fastest) {
    const double p = median(fastest->samples.at("total"));
    fmt::print(out, "ratio     step time / {}'s (the fastest Python side): C++ {:.2f} (goal <= 0.55)",
               fastest->name, total / p);
    for (const Side& side : sides) {
      if (!side.python) fmt::print(out, ", {} {:.2f} (goal <= 0.67)", side.name,
                                   median(side.samples.at("total")) / p);
    }
    fmt::print(out, "\n");
  }
  return 0;
}

void add_bench_train_command(CLI::App& bench, int* rc) {
  auto f = std::make_shared<BenchTrainFlags>();
  CLI::App* t = bench.add_subcommand(
      "train", "One training step, by phase, beside the same step in Python (python3-torch)");
  t->add_option("--preset", f->preset, "Model, as `gpt2 train --preset` builds it")
      ->check(CLI::IsMember(train_preset_names()))->capture_default_str();
  t->add_option("--batch-size", f->batch, "B")->check(gpt2::app::in_range(1, 1024))->capture_default_str();
  t->add_option("--seq", f->seq, "T")->check(gpt2::app::in_range(1, 1024))->capture_default_str();
  t->add_option("--steps", f->steps, "Timed steps")->check(gpt2::app::in_range(1, 1000))->capture_default_str();
  t->add_option("--warmup", f->warmup, "Untimed steps first")->check(gpt2::app::in_range(0, 100))
      ->capture_default_str();
  t->add_option("--rounds", f->rounds, "Alternating rounds")->check(gpt2::app::in_range(1, 20))
      ->capture_default_str();
  t->add_option("--threads", f->threads,
                 "torch intra-op threads (0: as the gpt2 command: OMP_NUM_THREADS, else the usable cores)")
      ->check(gpt2::app::in_range(0, 256))->capture_default_str();
  t->add_option("--peer-threads", f->peer_threads,
                 "The Python side's torch intra-op threads, one side per value (0: as --threads); "
                 "1,2 finds its fastest")
      ->delimiter(',')->check(gpt2::app::in_range(0, 256));
  t->add_option("--matmul", f->matmul,
                "The C++ side's float32 products (auto: the rule gpt2::matmul_backend() follows)")
      ->check(CLI::IsMember({"auto", "onednn", "torch"}))->capture_default_str();
  t->add_option("--peer-blas-core", f->peer_blas_core,
                "Also run the peer with OPENBLAS_CORETYPE set to this (auto: when OpenBLAS "
                "fell back to generic kernels; none: never)")
      ->check(CLI::Validator(
          [](std::string& core) -> std::string {
            const bool plain = !core.empty() && std::all_of(core.begin(), core.end(), [](char c) {
              return std::isalnum(static_cast<unsigned char>(c));
            });
            return plain ? "" : "an OpenBLAS core name is letters and digits, got '" + core + "'";
          }, "NAME", "core name"))
      ->capture_default_str();
  t->add_flag("--no-peer", f->no_peer, "Do not run the Python peer");
  t->add_flag("--no-app", f->no_app, "Do not run the linking app (gpt2-app-step), default or configured");
  t->callback([f, rc] { *rc = run_bench_train(*f, std::cout); });
}

}  // namespace gpt2::app
