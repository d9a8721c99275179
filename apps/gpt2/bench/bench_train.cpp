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
#include <memory>
#include <vector>

#include "apps/gpt2/common/runtime.h"
#include "apps/gpt2/common/train_presets.h"
#include "gpt2/error.h"
#include "gpt2/model/gpt.h"
#include "gpt2/model/kernels/matmul.h"
#include "gpt2/train/optim.h"

namespace gpt2::app {
namespace {

using Clock = std::chrono::steady_clock;
using Phases = std::map<std::string, double>;  // phase -> median seconds
const char* const kPhases[] = {"zero_grad", "forward", "backward", "clip", "optimizer", "total"};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double max_rss_bytes() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss * 1024.0;
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Float32 FLOP/s of a 2048^2 product, median of 5: through torch::mm (the
// system BLAS) or gpt2::linear (the product path the model uses).
double matmul_peak(bool model_path) {
  torch::NoGradGuard no_grad;
  auto a = torch::randn({2048, 2048}), b = torch::randn({2048, 2048});
  std::vector<double> rates;
  for (int i = 0; i < 6; ++i) {
    const auto t = Clock::now();
    auto c = model_path ? gpt2::linear(a, b, {}) : torch::mm(a, b);
    const double s = since(t);
    if (i > 0) rates.push_back(2.0 * 2048 * 2048 * 2048 / s);  // first one warms up
  }
  return median(rates);
}

Phases cpp_step(const GPTConfig& config, const BenchTrainFlags& f) {
  torch::manual_seed(0);
  GPT model(config);
  model->train();
  auto opt = configure_optimizers(
      *model, torch::optim::AdamWOptions(6e-4).betas({0.9, 0.95}).weight_decay(0.1));
  const auto params = model->unique_parameters();
  auto x = torch::randint(config.vocab_size(), {f.batch, f.seq});
  auto y = torch::randint(config.vocab_size(), {f.batch, f.seq});
  std::map<std::string, std::vector<double>> times;
  for (int step = 0; step < f.warmup + f.steps; ++step) {
    const auto t0 = Clock::now();
    opt->clear_grads();
    const double zero = since(t0);
    auto t = Clock::now();
    auto loss = model->forward(x, y).loss;
    const double fwd = since(t);
    t = Clock::now();
    loss.backward();
    const double bwd = since(t);
    t = Clock::now();
    torch::nn::utils::clip_grad_norm_(params, 1.0);
    const double clip = since(t);
    t = Clock::now();
    opt->step();
    const double optim = since(t);
    if (step < f.warmup) continue;
    times["zero_grad"].push_back(zero);
    times["forward"].push_back(fwd);
    times["backward"].push_back(bwd);
    times["clip"].push_back(clip);
    times["optimizer"].push_back(optim);
    times["total"].push_back(since(t0));
  }
  Phases out;
  for (const char* phase : kPhases) out[phase] = median(times[phase]);
  return out;
}

// One run of the peer; `core` non-empty sets OPENBLAS_CORETYPE for it.
struct PeerRun {
  Phases phases;
  double peak_rss = 0;
  std::string blas_core;
};

PeerRun peer_step(const GPTConfig& c, const BenchTrainFlags& f, int threads,
                  const std::string& core) {
  const std::string command = fmt::format(
      "{}/usr/bin/python3 '{}' {} {} {} {} {} {} {} {} {} {}",
      core.empty() ? "" : "OPENBLAS_CORETYPE=" + core + " ", GPT2_PEER_SCRIPT, c.n_layer(),
      c.n_head(), c.n_embd(), c.vocab_size(), c.block_size(), f.batch, f.seq, f.steps, f.warmup,
      threads);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw FileError(fmt::format("cannot run the Python peer: {}", command));
  std::string text;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) text.append(buffer, n);
  if (::pclose(pipe) != 0 || text.empty()) {
    throw FileError(fmt::format("the Python peer failed ({}); --no-peer skips it", command));
  }
  const auto json = nlohmann::json::parse(text);
  PeerRun run;
  for (const char* phase : kPhases) run.phases[phase] = json.at(phase).get<double>();
  run.peak_rss = json.at("peak_rss").get<double>();
  run.blas_core = json.value("blas_core", "?");
  return run;
}

using Samples = std::map<std::string, std::vector<double>>;  // phase -> one per round

// The peer's runs: as the environment gives it, and with better kernels.
struct Side {
  std::string name;
  std::string core;  // OPENBLAS_CORETYPE, or "" for the environment's choice
  Samples samples;
  PeerRun last;
};

}  // namespace

int run_bench_train(const BenchTrainFlags& f, std::ostream& out) {
  const GPTConfig config = train_preset(f.preset).model;  // the real shapes, wpe included
  const int threads = f.threads > 0 ? f.threads : default_threads();
  set_compute_threads(threads);
  const int peer_threads = f.peer_threads > 0 ? f.peer_threads : threads;
  set_matmul_backend(f.matmul == "torch" ? MatmulBackend::torch : MatmulBackend::onednn);
  const bool kept = keep_freed_memory();  // as `gpt2 train` runs
  const RuntimeInfo rt = runtime_info();
  const double blas_peak = matmul_peak(false), model_peak = matmul_peak(true);
  std::vector<Side> peers;
  if (!f.no_peer) {
    peers.push_back({"Python", "", {}, {}});
    const std::string core = f.peer_blas_core == "auto" ? better_blas_core(rt) : f.peer_blas_core;
    if (!core.empty() && core != "none") peers.push_back({"Python*", core, {}, {}});
  }
  Samples cpp;
  double first_rss = 0;  // one model's, as a `gpt2 train` process holds one
  for (int r = 0; r < f.rounds; ++r) {  // alternating, so drift hits every side
    for (const auto& [phase, s] : cpp_step(config, f)) cpp[phase].push_back(s);
    if (r == 0) first_rss = max_rss_bytes();
    for (Side& peer : peers) {
      peer.last = peer_step(config, f, peer_threads, peer.core);
      for (const auto& [phase, s] : peer.last.phases) peer.samples[phase].push_back(s);
    }
  }
  const double tokens = static_cast<double>(f.batch * f.seq);
  // nanoGPT's estimate: 6 N per token for the matmuls of forward and
  // backward, plus 12 L T C for attention.
  const double n = static_cast<double>(config.num_parameters(/*non_embedding=*/true));
  const double flops = tokens * (6 * n + 12.0 * config.n_layer() * f.seq * config.n_embd());
  fmt::print(out, "bench     {} preset, B {} T {}, AdamW (nanoGPT groups), median of {} steps after "
                  "{} warm-up, {} rounds\n", f.preset, f.batch, f.seq, f.steps, f.warmup, f.rounds);
  fmt::print(out, "threads   torch intra-op: C++ {}, Python {}; OpenBLAS {} threads, kernels {}\n",
             threads, peer_threads, rt.blas_threads, rt.blas_core.empty() ? "?" : rt.blas_core);
  fmt::print(out, "peak      float32 2048^2 product: torch::mm (BLAS) {:.1f} GFLOP/s, the model's "
                  "path ({}) {:.1f} GFLOP/s\n", blas_peak / 1e9, f.matmul, model_peak / 1e9);
  fmt::print(out, "memory    C++: {}; Python: glibc's defaults\n",
             kept ? "freed memory kept in the heap (as gpt2 train)" : "MALLOC_* from the environment");
  for (const Side& peer : peers) {
    fmt::print(out, "{:<9} python3-torch, OpenBLAS kernels {}{}\n", peer.name, peer.last.blas_core,
               peer.core.empty() ? " (as the environment gives them)"
                                 : " (OPENBLAS_CORETYPE=" + peer.core + ")");
  }
  fmt::print(out, "  {:<12} {:>10}", "phase", "C++ ms");
  for (const Side& peer : peers) fmt::print(out, " {:>10} {:>6}", peer.name + " ms", "ratio");
  fmt::print(out, "\n");
  for (const char* phase : kPhases) {
    const double c = median(cpp[phase]);
    fmt::print(out, "  {:<12} {:>10.1f}", phase, 1000 * c);
    for (const Side& peer : peers) {
      const double p = median(peer.samples.at(phase));
      fmt::print(out, " {:>10.1f} {:>6.2f}", 1000 * p, c / p);
    }
    fmt::print(out, "\n");
  }
  const double total = median(cpp["total"]);
  fmt::print(out, "C++       {:.0f} tokens/s, {:.1f} GFLOP/s = {:.0f}% of the model path's peak, "
                  "peak RSS {:.2f} GB after the first round ({:.2f} GB after all {}: each builds "
                  "a model)\n", tokens / total, flops / total / 1e9,
             100 * flops / total / model_peak, first_rss / 1e9, max_rss_bytes() / 1e9, f.rounds);
  for (const Side& peer : peers) {
    const double p = median(peer.samples.at("total"));
    fmt::print(out, "{:<9} {:.0f} tokens/s, peak RSS {:.2f} GB; C++ step time / its step time = "
                    "{:.2f} (goal <= 0.67)\n", peer.name, tokens / p, peer.last.peak_rss / 1e9,
               total / p);
  }
  return 0;
}

void add_bench_train_command(CLI::App& bench, int* rc) {
  auto f = std::make_shared<BenchTrainFlags>();
  CLI::App* t = bench.add_subcommand(
      "train", "One training step, by phase, beside the same step in Python (python3-torch)");
  t->add_option("--preset", f->preset, "Model, as `gpt2 train --preset` builds it")
      ->check(CLI::IsMember(train_preset_names()))->capture_default_str();
  t->add_option("--batch-size", f->batch, "B")->check(CLI::Range(1, 1024))->capture_default_str();
  t->add_option("--seq", f->seq, "T")->check(CLI::Range(1, 1024))->capture_default_str();
  t->add_option("--steps", f->steps, "Timed steps")->check(CLI::Range(1, 1000))->capture_default_str();
  t->add_option("--warmup", f->warmup, "Untimed steps first")->check(CLI::Range(0, 100))
      ->capture_default_str();
  t->add_option("--rounds", f->rounds, "Alternating rounds")->check(CLI::Range(1, 20))
      ->capture_default_str();
  t->add_option("--threads", f->threads,
                 "torch intra-op threads (0: as the gpt2 command: OMP_NUM_THREADS, else the usable cores)")
      ->check(CLI::Range(0, 256))->capture_default_str();
  f->matmul = to_string(matmul_backend());
  t->add_option("--peer-threads", f->peer_threads,
                 "The Python side's torch intra-op threads (0: as --threads)")
      ->check(CLI::Range(0, 256))->capture_default_str();
  t->add_option("--matmul", f->matmul, "The C++ side's float32 products")
      ->check(CLI::IsMember({"onednn", "torch"}))->capture_default_str();
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
  t->callback([f, rc] { *rc = run_bench_train(*f, std::cout); });
}

}  // namespace gpt2::app
