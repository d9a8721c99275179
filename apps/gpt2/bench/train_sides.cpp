#include "apps/gpt2/bench/train_sides.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>

#include "gpt2/error.h"

namespace gpt2::app {
namespace {

std::string config_args(const GPTConfig& c, const BenchTrainFlags& f) {
  return fmt::format("{} {} {} {} {} {} {} {} {}", c.n_layer(), c.n_head(), c.n_embd(),
                     c.vocab_size(), c.block_size(), f.batch, f.seq, f.steps, f.warmup);
}

}  // namespace

std::string shell_word(const std::string& word) {
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

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

std::vector<Side> external_sides(const GPTConfig& config, const BenchTrainFlags& f, int threads,
                                 const RuntimeInfo& rt) {
  std::vector<Side> sides;
  const std::string args = config_args(config, f);
  const std::string where = fmt::format("device={} dtype={}", f.device, f.dtype);
  if (!f.no_app) {
    sides.push_back({"app", fmt::format("{} {} {}", shell_word(GPT2_APP_STEP), args, where),
                     "a linking app, default settings (apps/bench/app_step.cpp)", false, {}, {}});
    if (f.device == "cpu") {  // configure_runtime sets the CPU's threads and heap only
      sides.push_back({"app+config",
                       fmt::format("{} {} configure {}", shell_word(GPT2_APP_STEP), args, where),
                       "the same app after gpt2::configure_runtime()", false, {}, {}});
    }
  }
  if (f.no_peer) return sides;
  std::vector<int> peer_threads = f.peer_threads;
  if (peer_threads.empty()) peer_threads.push_back(0);
  for (int& t : peer_threads) t = t > 0 ? t : threads;
  const auto python = [&](int t, const std::string& core, bool compiled = false) {
    return fmt::format("{}{} {} {} {} --device {} --dtype {}{}",
                       core.empty() ? "" : "OPENBLAS_CORETYPE=" + shell_word(core) + " ",
                       shell_word(f.peer_python), shell_word(GPT2_PEER_SCRIPT), args, t,
                       shell_word(f.device), f.dtype, compiled ? " --compile" : "");
  };
  if (f.device != "cpu") {  // the GPU peers: nanoGPT eager, and compiled
    sides.push_back({"Python", python(0, ""), "nanoGPT's model, eager", true, {}, {}});
    if (f.peer_compile) {
      sides.push_back({"Py compile", python(0, "", true), "nanoGPT's model under torch.compile",
                       true, {}, {}});
    }
    return sides;
  }
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

}  // namespace gpt2::app
