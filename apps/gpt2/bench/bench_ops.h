#pragma once
// `gpt2 bench ops`: each op the library runs on a kernel of its own on the
// CPU (attention, cross-entropy, the tied embedding, GELU, LayerNorm, AdamW),
// forward and backward at one training step's shapes, beside the op torch
// itself offers in the LibTorch it runs on, alternating in one run.

#include <CLI/App.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>

namespace gpt2::app {

/// Values of `bench ops`.
struct BenchOpsFlags {
  std::string preset = "gpt2";
  int64_t batch = 4;
  int64_t seq = 64;
  int repeats = 9;
};

/// Prints one row per op: the library's milliseconds, torch's, and their
/// ratio. Returns 0.
int run_bench_ops(const BenchOpsFlags& flags, std::ostream& out);

/// Registers `ops` under the `bench` subcommand.
void add_bench_ops_command(CLI::App& bench, int* rc);

}  // namespace gpt2::app
