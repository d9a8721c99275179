#pragma once
// The lines `gpt2 train` prints before its first step: where the weights
// came from, the config, the recipe, the data, the runtime and the device.

#include <torch/types.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/gpt2/train/run_config.h"
#include "gpt2/io/model_source.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/trainer.h"

namespace gpt2::app {

/// What the start lines name beside the trainer's own state.
struct RunStart {
  /// The loader's notes on --init-from's file (widened dtypes, ...).
  std::vector<std::string> notes;
  /// --init-from's config and path, or null.
  const Pretrained* pretrained = nullptr;
  ModelFormat format = ModelFormat::kCheckpoint;
  DatasetMeta meta;
  /// Ranks of the run (1 without data parallelism).
  int64_t world = 1;
  torch::Device device = torch::kCPU;
  /// --dtype as given.
  std::string dtype = "float32";
  std::string checkpoint, log;
};

/// Prints the start lines of `t`'s run to `out` and flushes standard output.
void print_run_start(std::FILE* out, const Trainer& t, const RunStart& s);

}  // namespace gpt2::app
