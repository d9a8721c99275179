#include "apps/gpt2/bench_train.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <torch/nn/utils/clip_grad.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/model/gpt.h"
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

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Float32 matmul FLOP/s through the BLAS torch uses: 2048^2, median of 5.
double matmul_peak() {
  auto a = torch::randn({2048, 2048}), b = torch::randn({2048, 2048});
  std::vector<double> rates;
  for (int i = 0; i < 6; ++i) {
    const auto t = Clock::now();
    auto c = torch::mm(a, b);
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

Phases peer_step(const GPTConfig& c, const BenchTrainFlags& f, double* peak_rss) {
  const std::string command = fmt::format(
      "/usr/bin/python3 '{}' {} {} {} {} {} {} {} {} {}", GPT2_PEER_SCRIPT, c.n_layer(),
      c.n_head(), c.n_embd(), c.vocab_size(), c.block_size(), f.batch, f.seq, f.steps, f.warmup);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw FileError(fmt::format("cannot run the Python peer: {}", command));
  std::string text;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) text.append(buffer, n);
  if (::pclose(pipe) != 0 || text.empty()) {
    throw FileError(fmt::format("the Python peer failed ({}); --no-peer skips it", command));
  }
  const auto json = nlohmann::json::parse(text);
  Phases out;
  for (const char* phase : kPhases) out[phase] = json.at(phase).get<double>();
  *peak_rss = json.at("peak_rss").get<double>();
  return out;
}

}  // namespace

int run_bench_train(const BenchTrainFlags& f, std::ostream& out) {
  const GPTConfig config = GPTConfig::preset(f.preset);  // the real shapes, wpe included
  const double peak = matmul_peak();
  std::map<std::string, std::vector<double>> cpp, peer;
  double peer_rss = 0;
  for (int r = 0; r < f.rounds; ++r) {  // alternating, so drift hits both sides
    for (const auto& [phase, s] : cpp_step(config, f)) cpp[phase].push_back(s);
    if (f.no_peer) continue;
    for (const auto& [phase, s] : peer_step(config, f, &peer_rss)) peer[phase].push_back(s);
  }
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  const double tokens = static_cast<double>(f.batch * f.seq);
  // nanoGPT's estimate: 6 N per token for the matmuls of forward and
  // backward, plus 12 L T C for attention.
  const double n = static_cast<double>(config.num_parameters(/*non_embedding=*/true));
  const double flops = tokens * (6 * n + 12.0 * config.n_layer() * f.seq * config.n_embd());
  fmt::print(out, "bench     {} preset, B {} T {}, AdamW (nanoGPT groups), median of {} steps after "
                  "{} warm-up, {} rounds\n", f.preset, f.batch, f.seq, f.steps, f.warmup, f.rounds);
  fmt::print(out, "peak      float32 matmul 2048^2: {:.1f} GFLOP/s\n", peak / 1e9);
  fmt::print(out, "  {:<12} {:>12} {:>12} {:>8}\n", "phase", "C++ ms", "Python ms", "ratio");
  for (const char* phase : kPhases) {
    const double c = median(cpp[phase]);
    if (f.no_peer) {
      fmt::print(out, "  {:<12} {:>12.1f}\n", phase, 1000 * c);
    } else {
      const double p = median(peer[phase]);
      fmt::print(out, "  {:<12} {:>12.1f} {:>12.1f} {:>8.2f}\n", phase, 1000 * c, 1000 * p, c / p);
    }
  }
  const double total = median(cpp["total"]);
  fmt::print(out, "C++       {:.0f} tokens/s, {:.1f} GFLOP/s = {:.0f}% of the matmul peak, peak RSS "
                  "{:.2f} GB\n", tokens / total, flops / total / 1e9, 100 * flops / total / peak,
             usage.ru_maxrss * 1024.0 / 1e9);
  if (!f.no_peer) {
    const double p = median(peer["total"]);
    fmt::print(out, "Python    {:.0f} tokens/s, peak RSS {:.2f} GB\n", tokens / p, peer_rss / 1e9);
    fmt::print(out, "ratio     C++ step time / Python step time = {:.2f} (goal <= 0.67)\n", total / p);
  }
  return 0;
}

void add_bench_train_command(CLI::App& bench, int* rc) {
  auto f = std::make_shared<BenchTrainFlags>();
  CLI::App* t = bench.add_subcommand(
      "train", "One training step, by phase, beside the same step in Python (python3-torch)");
  t->add_option("--preset", f->preset, "Model size")
      ->check(CLI::IsMember(GPTConfig::preset_names()))->capture_default_str();
  t->add_option("--batch-size", f->batch, "B")->check(CLI::Range(1, 1024))->capture_default_str();
  t->add_option("--seq", f->seq, "T")->check(CLI::Range(1, 1024))->capture_default_str();
  t->add_option("--steps", f->steps, "Timed steps")->check(CLI::Range(1, 1000))->capture_default_str();
  t->add_option("--warmup", f->warmup, "Untimed steps first")->check(CLI::Range(0, 100))
      ->capture_default_str();
  t->add_option("--rounds", f->rounds, "Alternating rounds")->check(CLI::Range(1, 20))
      ->capture_default_str();
  t->add_flag("--no-peer", f->no_peer, "Do not run the Python peer");
  t->callback([f, rc] { *rc = run_bench_train(*f, std::cout); });
}

}  // namespace gpt2::app
