#pragma once
// The text `gpt2 train` prints after training: nanoGPT's sample.py settings
// (temperature 0.8, top-k 200, the run's seed) from the data's start token.

#include <atomic>
#include <cstdint>
#include <string>

#include "gpt2/model/gpt.h"
#include "gpt2/train/dataset.h"

namespace gpt2::app {

/// Prints `tokens` tokens sampled from `model` on standard output: char
/// text streamed as it is sampled, BPE text whole at the end (a GPT-2 token
/// may end inside a character). When `stop` is set meanwhile (SIGINT or
/// SIGTERM), the sample ends there with a line saying that `checkpoint` is
/// whole.
void print_closing_sample(GPTImpl& model, const DatasetMeta& meta, int64_t tokens, uint64_t seed,
                          const std::atomic<bool>& stop, const std::string& checkpoint);

}  // namespace gpt2::app
