#pragma once
// `gpt2 train --out OUT --resume` where OUT/ckpt.pt is nanoGPT's own
// (train.py's out/ckpt.pt): the model, AdamW state, iter_num and recipe
// from it, the data from --data or nanoGPT's data/<dataset>.

#include <cstdio>
#include <optional>
#include <string>

#include "apps/gpt2/train/run_config.h"
#include "gpt2/io/nanogpt.h"

namespace gpt2::app {

/// A nanoGPT run to continue.
struct NanoGPTResume {
  /// The file read with its optimizer state.
  NanoGPTCheckpoint checkpoint;
  /// Its model config and the recipe from its config dict.
  SavedRun saved;
  /// The token folder the run reads.
  std::string data;
};

/// Reads `ckpt` when it is a nanoGPT checkpoint (nullopt otherwise, left to
/// the gpt2 checkpoint reader). The data: `data_flag`, else nanoGPT's
/// `data/<config['dataset']>` under the working directory when it holds
/// train.bin; ConfigError naming both otherwise. Prints the recipe taken
/// and, once, that nanoGPT's batch order does not carry over, to `out`.
std::optional<NanoGPTResume> read_nanogpt_resume(const std::string& ckpt,
                                                 const std::string& data_flag, std::FILE* out);

}  // namespace gpt2::app
