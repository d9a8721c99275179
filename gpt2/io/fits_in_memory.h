#pragma once
/// The size check for models made from files and flags: a config read from
/// a checkpoint or typed on a command line is held against the memory this
/// process may use before anything is allocated, so a size typo in a
/// container fails at once with the container's figure instead of meeting
/// the OOM killer later. GPT's constructor does not check: an app that
/// builds a model from its own config calls this where it wants the check.

#include <cstdint>

#include "gpt2/model/config.h"

namespace gpt2 {

/// Throws ConfigError with the byte counts when config's parameters, at
/// `bytes_per_parameter` each, need more than this process may use
/// (usable_memory(): physical memory or a lower cgroup limit, named in the
/// message).
void check_fits_in_memory(const GPTConfig& config, int64_t bytes_per_parameter = 4);

}  // namespace gpt2
