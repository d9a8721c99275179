#pragma once
// `gpt2 init-study`: what GPT-2's residual scale does, measured. The sweep
// builds models of several depths under each residual scheme and records,
// at init on random tokens, the residual stream's std after every block,
// the logits' std and each block's gradient norm from one backward pass.

#include <CLI/App.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "gpt2/model/config.h"

namespace gpt2::app {

/// The residual schemes every init study compares, GPT-2's first.
inline constexpr ResidualScale kStudySchemes[] = {
    ResidualScale::kTwoPerBlock, ResidualScale::kOnePerBlock, ResidualScale::kNone};

/// How tables and legends name a scheme: "N = 2L", "N = L", "N = 1 (none)".
std::string scheme_label(ResidualScale scheme);

/// One model's numbers at init.
struct InitProfile {
  int64_t n_layer = 0;
  ResidualScale scheme = ResidualScale::kTwoPerBlock;
  /// std of the residual stream after block i (i = 0 .. n_layer-1).
  std::vector<double> residual_std;
  /// std of the logits.
  double logits_std = 0;
  /// Norm of block i's parameter gradients from one backward of the loss.
  std::vector<double> block_grad_norm;
  /// The loss on random tokens (about ln(vocab_size) at init).
  double loss = 0;
};

/// Builds a model of `config` (seeded), runs a (batch, seq) batch of random
/// tokens with random targets forward and backward, and measures it.
InitProfile profile_at_init(const GPTConfig& config, int64_t batch, int64_t seq,
                            uint64_t data_seed);

/// Values of `init-study sweep`.
struct SweepFlags {
  std::vector<int64_t> depths = {12, 24, 36, 48};
  int64_t n_embd = 256;
  int64_t n_head = 4;
  int64_t vocab_size = 50257;
  int64_t batch = 8;
  int64_t seq = 64;
  uint64_t seed = 1337;
  std::string out = ".";
};

/// Runs the sweep, prints the table to `out`, writes DIR/init_sweep.csv.
/// Returns the profiles, depth-major, schemes 2n, n, none.
std::vector<InitProfile> run_sweep(const SweepFlags& flags, std::ostream& out);

/// Registers `init-study sweep` and `init-study train` on `app`.
void add_init_study_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
