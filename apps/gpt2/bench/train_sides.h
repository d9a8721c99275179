#pragma once
// The sides `gpt2 bench train` runs in their own processes, one step each
// round: the default-settings app (apps/bench/app_step.cpp), the same app
// configured, and the Python peer (apps/bench/peer_step.py), each on the
// device and dtype the flags give, each run under its own time cap; and
// the lines that report them.

#include <iosfwd>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "apps/gpt2/bench/bench_train.h"
#include "apps/gpt2/bench/shell_command.h"
#include "gpt2/model/config.h"
#include "gpt2/runtime/runtime.h"

namespace gpt2::app {

/// phase -> median seconds.
using Phases = std::map<std::string, double>;
/// The phases of a step, in order.
inline const char* const kPhases[] = {"zero_grad", "forward", "backward", "clip", "optimizer", "total"};

/// One run of a side in its own process.
struct PeerRun {
  Phases phases;
  double peak_rss = 0;
  std::string blas_core, runtime;
  /// Where its tensors were, as it says ("cpu", "cuda:0").
  std::string device;
  /// Empty when the run gave its figures; else why not (run_capped's words,
  /// or "no line of figures: ...").
  std::string failure;
};

/// Runs `command` under a cap of `timeout_s` seconds and reads its last line
/// of output as JSON; a failure is returned in PeerRun::failure, not thrown.
/// A run whose tensors were not on `device` (its JSON's "device", as
/// torch::Device spells it; "cuda" takes any index) gave no figures of
/// this bench: a failure naming both.
PeerRun external_step(const std::string& command, int timeout_s, const std::string& device);

/// phase -> one sample per round.
using Samples = std::map<std::string, std::vector<double>>;

/// A side run in its own process each round.
struct Side {
  std::string name;
  std::string command;
  std::string about;
  /// The device its step must run on (bench train's --device).
  std::string device = "cpu";
  bool python = true;
  /// Run by the bench itself, not as a command (bench train's C++ logits
  /// and C++ torch ops sides): no goal of its own.
  bool in_process = false;
  /// An in-process side's step, timed as the C++ side's.
  std::function<Phases()> step;
  Samples samples;
  PeerRun last;
  /// Empty while the side runs; else "in round N: why". A failed side is
  /// not run again.
  std::string failure;
};

/// The sides the flags ask for, with the C++ side's `threads` and runtime.
std::vector<Side> external_sides(const GPTConfig& config, const BenchTrainFlags& f, int threads,
                                 const RuntimeInfo& rt);

/// "round N   NAME  what": a side's line as each round goes.
std::string round_line(int round, const std::string& name, const std::string& what);

/// Runs `side` once unless it failed before; adds its samples, or records
/// its failure; prints its line for round `round` (from 1) either way.
void run_side(Side& side, int round, int timeout_s, std::ostream& out);

/// Prints each side's line (what it is, its runtime, or FAILED and why) and
/// the phase table of the C++ side and the sides that gave figures.
void print_phase_table(const Samples& cpp, const std::vector<Side>& sides, std::ostream& out);

/// Prints tokens/s of the sides that gave figures and the ratio of each
/// step time to the fastest Python side's; `cpp_total` is the C++ step's
/// median seconds.
void print_side_rates(const std::vector<Side>& sides, double tokens, double cpp_total, bool gpu,
                      std::ostream& out);

}  // namespace gpt2::app
