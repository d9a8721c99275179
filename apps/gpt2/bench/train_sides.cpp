#include "apps/gpt2/bench/train_sides.h"

#include <c10/core/Device.h>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include <ostream>

#include "apps/gpt2/bench/bench_stats.h"

namespace gpt2::app {
namespace {

std::string config_args(const GPTConfig& c, const BenchTrainFlags& f) {
  return fmt::format("{} {} {} {} {} {} {} {} {}", c.n_layer(), c.n_head(), c.n_embd(),
                     c.vocab_size(), c.block_size(), f.batch, f.seq, f.steps, f.warmup);
}

// The last line of `text` that holds more than blanks.
std::string last_line_of(const std::string& text) {
  const size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  const size_t newline = text.rfind('\n', end);
  const size_t begin = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(begin, end + 1 - begin);
}

// Why a step that says it ran on `ran` gave no figures for `asked`, or "".
std::string elsewhere(const std::string& ran, const std::string& asked) {
  try {
    const torch::Device r(ran), a(asked);
    if (r.type() == a.type() && (!a.has_index() || r.index() == a.index())) return "";
  } catch (const c10::Error&) {  // a name torch does not know
  }
  return fmt::format("it ran on {}, not on {}", ran, asked);
}

}  // namespace

PeerRun external_step(const std::string& command, int timeout_s, const std::string& device) {
  const CappedRun capped = run_capped(command, timeout_s);
  PeerRun run;
  run.failure = capped.failure;
  if (!run.failure.empty()) return run;
  const std::string line = last_line_of(capped.out);
  const auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (line.empty() || json.is_discarded()) {
    run.failure = line.empty() ? "it printed nothing"
                               : fmt::format("its last line is no JSON of figures: '{}'",
                                             line.size() > 120 ? line.substr(0, 117) + "..." : line);
    return run;
  }
  try {
    for (const char* phase : kPhases) run.phases[phase] = json.at(phase).get<double>();
    run.peak_rss = json.at("peak_rss").get<double>();
    run.blas_core = json.value("blas_core", "?");
    run.runtime = json.value("runtime", "");
    run.device = json.at("device").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    run.failure = fmt::format("its JSON lacks a figure: {}", e.what());
    return run;
  }
  run.failure = elsewhere(run.device, device);
  return run;
}

std::vector<Side> external_sides(const GPTConfig& config, const BenchTrainFlags& f, int threads,
                                 const RuntimeInfo& rt) {
  std::vector<Side> sides;
  const std::string args = config_args(config, f);
  const std::string where = fmt::format("device={} dtype={}", f.device, f.dtype);
  const auto side = [&f](std::string name, std::string command, std::string about, bool python) {
    Side s;
    s.name = std::move(name);
    s.device = f.device;
    s.command = std::move(command);
    s.about = std::move(about);
    s.python = python;
    return s;
  };
  if (!f.no_app) {
    sides.push_back(side("app", fmt::format("{} {} {}", shell_word(GPT2_APP_STEP), args, where),
                         "a linking app, default settings (apps/bench/app_step.cpp)", false));
    if (f.device == "cpu") {  // configure_runtime sets the CPU's threads and heap only
      sides.push_back(side("app+config",
                           fmt::format("{} {} configure {}", shell_word(GPT2_APP_STEP), args, where),
                           "the same app after gpt2::configure_runtime()", false));
    }
  }
  if (f.no_peer) return sides;
  std::vector<int> peer_threads = f.peer_threads;
  if (peer_threads.empty()) peer_threads.push_back(0);
  for (int& t : peer_threads) t = t > 0 ? t : threads;
  const auto python = [&](int t, const std::string& core, bool compiled = false,
                           bool shipped = false) {
    return fmt::format("{}{} {} {} {} --device {} --dtype {}{}{}",
                       core.empty() ? "" : "OPENBLAS_CORETYPE=" + shell_word(core) + " ",
                       shell_word(f.peer_python), shell_word(GPT2_PEER_SCRIPT), args, t,
                       shell_word(f.device), f.dtype, compiled ? " --compile" : "",
                       shipped ? " --shipped" : "");
  };
  // nanoGPT's model as its bench.py ships it.
  const auto shipped = [&](int t, bool compiled) {
    return side("Py shipped", python(t, "", compiled, true),
                fmt::format("nanoGPT's model as its bench.py ships it (vocabulary {}, no "
                            "biases), {}", (config.vocab_size() + 63) / 64 * 64,
                            compiled ? "under torch.compile" : "eager"),
                true);
  };
  if (f.device != "cpu") {  // the GPU peers: nanoGPT eager, and compiled
    sides.push_back(side("Python", python(0, ""), "nanoGPT's model, eager", true));
    if (f.peer_compile) {
      sides.push_back(side("Py compile", python(0, "", true),
                           "nanoGPT's model under torch.compile", true));
    }
    if (f.peer_shipped) sides.push_back(shipped(0, f.peer_compile));
    return sides;
  }
  for (int t : peer_threads) {
    const std::string name = peer_threads.size() > 1 ? fmt::format("Py t{}", t) : "Python";
    sides.push_back(side(name, python(t, ""), fmt::format("{} torch threads, OpenBLAS as the "
                         "environment gives it", t), true));
  }
  if (f.peer_shipped) sides.push_back(shipped(peer_threads.front(), false));
  const std::string core = f.peer_blas_core == "auto" ? better_blas_core(rt) : f.peer_blas_core;
  if (!core.empty() && core != "none") {
    sides.push_back(side("Python*", python(peer_threads.front(), core),
                         fmt::format("{} torch threads, OPENBLAS_CORETYPE={}",
                                     peer_threads.front(), core), true));
  }
  return sides;
}

std::string round_line(int round, const std::string& name, const std::string& what) {
  return fmt::format("round {:<3} {:<10} {}\n", round, name, what);
}

void run_side(Side& side, int round, int timeout_s, std::ostream& out) {
  if (!side.failure.empty()) return;
  PeerRun run = external_step(side.command, timeout_s, side.device);
  if (!run.failure.empty()) {
    side.failure = fmt::format("in round {}: {}", round, run.failure);
    out << round_line(round, side.name, "FAILED: " + run.failure + "; not run again");
    return;
  }
  for (const auto& [phase, s] : run.phases) side.samples[phase].push_back(s);
  out << round_line(round, side.name, fmt::format("{:.1f} ms a step{}", 1000 * run.phases.at("total"),
                                                  run.runtime.empty() ? "" : " (" + run.runtime + ")"));
  side.last = std::move(run);
}

void print_phase_table(const Samples& cpp, const std::vector<Side>& sides, std::ostream& out) {
  std::vector<const Side*> ran;
  for (const Side& side : sides) {
    if (!side.failure.empty()) {
      fmt::print(out, "{:<10} {}: FAILED {}\n", side.name, side.about, side.failure);
    } else {
      fmt::print(out, "{:<10} {}{}\n", side.name, side.about,
                 side.last.runtime.empty() ? "" : ": " + side.last.runtime);
    }
    if (!side.samples.empty()) ran.push_back(&side);
  }
  fmt::print(out, "  {:<12} {:>10}", "phase ms", "C++");
  for (const Side* side : ran) fmt::print(out, " {:>10}", side->name);
  fmt::print(out, "\n");
  for (const char* phase : kPhases) {
    fmt::print(out, "  {:<12} {:>10.1f}", phase, 1000 * median(cpp.at(phase)));
    for (const Side* side : ran) fmt::print(out, " {:>10.1f}", 1000 * median(side->samples.at(phase)));
    fmt::print(out, "\n");
  }
}

void print_side_rates(const std::vector<Side>& sides, double tokens, double cpp_total, bool gpu,
                      std::ostream& out) {
  const Side* fastest = nullptr;  // the Python side at its fastest setting
  for (const Side& side : sides) {
    if (side.samples.empty()) continue;
    const double p = median(side.samples.at("total"));
    if (side.in_process) {
      fmt::print(out, "{:<10} {:.0f} tokens/s; C++ step time / this one's: {:.2f}\n", side.name,
                 tokens / p, cpp_total / p);
      continue;
    }
    fmt::print(out, "{:<10} {:.0f} tokens/s, peak RSS {:.2f} GB\n", side.name, tokens / p,
               side.last.peak_rss / 1e9);
    if (side.python && (!fastest || p < median(fastest->samples.at("total")))) fastest = &side;
  }
  if (!fastest) return;
  const double p = median(fastest->samples.at("total"));
  // The CPU goals are issue 39's; on a GPU, at most the peer's time.
  fmt::print(out, "ratio     step time / {}'s (the fastest Python side): C++ {:.2f} (goal <= {})",
             fastest->name, cpp_total / p, gpu ? "1.00" : "0.55");
  for (const Side& side : sides) {
    if (!side.python && !side.in_process && !side.samples.empty()) {
      fmt::print(out, ", {} {:.2f} (goal <= {})", side.name, median(side.samples.at("total")) / p,
                 gpu ? "1.00" : "0.67");
    }
  }
  fmt::print(out, "\n");
}

}  // namespace gpt2::app
