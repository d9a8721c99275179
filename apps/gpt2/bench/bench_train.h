#pragma once
// `gpt2 bench train`: one training step of this library as the gpt2
// command runs it, beside the same step in an app that links the library
// with default settings (apps/bench/app_step.cpp) and in plain torch
// (apps/bench/peer_step.py on Debian's python3-torch, the same LibTorch), in
// one invocation, alternating the sides.

#include <CLI/App.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace gpt2::app {

/// Values of `bench train`.
struct BenchTrainFlags {
  std::string preset = "gpt2";
  int64_t batch = 4;
  int64_t seq = 64;
  int steps = 5;
  int warmup = 2;
  /// Rounds of (C++, app, Python); each side's figure is the median over rounds.
  int rounds = 2;
  /// torch intra-op threads on both sides; 0: default_threads(), as the
  /// gpt2 command runs.
  int threads = 0;
  /// The peer's torch intra-op threads, one Python side per value; 0 or
  /// none: the same as the C++ side's.
  std::vector<int> peer_threads;
  /// The C++ side's matrix products: "auto" (the rule,
  /// gpt2/ops/cpu/matmul.h), "onednn" or "torch".
  std::string matmul = "auto";
  /// A second Python run with OPENBLAS_CORETYPE set to this: "auto" picks
  /// better_blas_core() (none when OpenBLAS chose well), "none" skips it.
  std::string peer_blas_core = "auto";
  /// Skip the Python peer (no python3-torch, or only this side wanted).
  bool no_peer = false;
  /// Skip the default-settings app (gpt2-app-step beside the gpt2 binary).
  bool no_app = false;
  /// Where every side runs: cpu, cuda or cuda:N.
  std::string device = "cpu";
  /// float32, or bfloat16 autocast on every side.
  std::string dtype = "float32";
  /// Also run the peer under torch.compile.
  bool peer_compile = false;
  /// Also run the peer as nanoGPT's bench.py ships it (vocabulary padded to
  /// a multiple of 64, no biases); on a GPU compiled with peer_compile.
  bool peer_shipped = false;
  /// The Python that runs the peer (Debian's python3-torch by default).
  std::string peer_python = "/usr/bin/python3";
  /// Seconds each run of an external side may take (coreutils' timeout);
  /// one that fails is reported and left out of later rounds.
  int side_timeout = 240;
  /// Also time the C++ step through nanoGPT's forward (logits made), in
  /// this process, alternating.
  bool logits_side = false;
  /// Also time the C++ step with torch's ops where the library has CUDA
  /// kernels of its own (set_cuda_kernels(false)), in this process.
  bool torch_ops_side = false;
  /// On a GPU: C++ steps run under LibTorch's profiler after the rounds,
  /// their kernels' device time printed (0: none).
  int profile_steps = 0;
};

/// Prints per-phase step times, tokens/s, model FLOP/s as a fraction of a
/// matmul peak measured in the same run, peak RSS, and the ratio to the
/// Python peer: the header and peak at once, a line per side as each round
/// runs it, the table at the end. A failing external side is a FAILED line;
/// the C++ side's failure is thrown.
int run_bench_train(const BenchTrainFlags& flags, std::ostream& out);

/// Registers `train` under the `bench` subcommand.
void add_bench_train_command(CLI::App& bench, int* rc);

}  // namespace gpt2::app
