#pragma once
// The sides `gpt2 bench train` runs in their own processes, one step each
// round: the default-settings app (apps/bench/app_step.cpp), the same app
// configured, and the Python peer (apps/bench/peer_step.py), each on the
// device and dtype the flags give.

#include <map>
#include <string>
#include <vector>

#include "apps/gpt2/bench/bench_train.h"
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
};

/// `word` quoted for /bin/sh: every byte stays itself, quotes included.
std::string shell_word(const std::string& word);

/// Runs `command` and reads its line of JSON; FileError naming `skip_flag`
/// (the flag that leaves the side out) when it fails.
PeerRun external_step(const std::string& command, const std::string& skip_flag);

/// phase -> one sample per round.
using Samples = std::map<std::string, std::vector<double>>;

/// A side run in its own process each round.
struct Side {
  std::string name;
  std::string command;
  std::string about;
  bool python = true;
  Samples samples;
  PeerRun last;
};

/// The sides the flags ask for, with the C++ side's `threads` and runtime.
std::vector<Side> external_sides(const GPTConfig& config, const BenchTrainFlags& f, int threads,
                                 const RuntimeInfo& rt);

}  // namespace gpt2::app
