#pragma once
// What every importer (safetensors, llm.c) does once it has a config and
// nanoGPT-named tensors: build the model and load it through the one
// state-dict gate.

#include <torch/types.h>

#include <string>
#include <vector>

#include "gpt2/io/state_dict.h"
#include "gpt2/model/config.h"
#include "gpt2/model/gpt.h"

namespace gpt2::detail {

/// Builds a model of `config` in `dtype` without drawing, and loads
/// `tensors` into it with load_state_dict, listing `problems` (found by the
/// importer) with the gate's own. A config that cannot describe a model, or
/// one that needs more values than `tensors` hold (so that a hostile file
/// cannot make it allocate more than the file's size), is a problem too and
/// nothing is built. Throws CheckpointError naming `source`. kAdopt only
/// for tensors the importer made for this load alone (load_state_dict).
GPT build_and_load(const GPTConfig& config, const StateDict& tensors, torch::ScalarType dtype,
                   const std::string& source, std::vector<std::string> problems,
                   LoadMode mode = LoadMode::kCopy);

/// `tensors` converted to `dtype` (a copy only where the dtype differs).
StateDict converted(const StateDict& tensors, torch::ScalarType dtype);

}  // namespace gpt2::detail
