#pragma once
// Flags that choose a model: a preset, overrides of its sizes, and the init
// scheme. Shared by every subcommand that builds a model.

#include <CLI/App.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpt2/config.h"

namespace gpt2::app {

/// Values of the model flags, filled by CLI11.
struct ModelFlags {
  std::string preset = "gpt2";
  std::optional<int64_t> n_layer, n_head, n_embd, block_size, vocab_size;
  std::optional<double> dropout;
  std::string gelu = "tanh";
  bool no_bias = false;
  uint64_t seed = 1337;
  std::string init_scheme = "2n";
  double wpe_std = 0.02;

  /// Adds --preset, --n-layer, ..., --seed, --init-scheme, --wpe-std to
  /// `app`; returns them, so a command can make another flag exclude them.
  std::vector<CLI::Option*> add_to(CLI::App& app);
  /// The preset with every given override; throws ConfigError if invalid.
  GPTConfig config() const;
};

}  // namespace gpt2::app
