#pragma once
// `gpt2 init-study sweep`: models of several depths under each residual
// scheme, measured at init on random tokens: the residual stream's std after
// every block, the logits' std and each block's gradient norm from one
// backward pass.

#include <CLI/App.hpp>

#include <cstdint>
#include <iosfwd>
#include <vector>

#include "apps/gpt2/init_study/study_types.h"
#include "gpt2/model/config.h"

namespace gpt2::app {

/// The sweep's schemes: kStudySchemes without kZero, whose stream at init
/// is the embedding itself at every depth.
inline constexpr ResidualScale kSweepSchemes[] = {
    ResidualScale::kTwoPerBlock, ResidualScale::kOnePerBlock, ResidualScale::kNone};

/// The deepest model the sweep builds: its time grows with the square of
/// the depth (docs/init.md gives a figure).
inline constexpr int64_t kMaxSweepDepth = 256;

/// Builds a model of `config` (seeded), runs a (batch, seq) batch of random
/// tokens with random targets forward and backward, and measures it.
InitProfile profile_at_init(const GPTConfig& config, int64_t batch, int64_t seq,
                            uint64_t data_seed);

/// Runs the sweep, prints the table to `out`, writes DIR/init_sweep.csv.
/// Returns the profiles, depth-major, schemes 2n, n, none.
std::vector<InitProfile> run_sweep(const SweepFlags& flags, std::ostream& out);

/// Registers `sweep` on the `init-study` command.
void add_sweep_command(CLI::App& study, int* rc);

}  // namespace gpt2::app
