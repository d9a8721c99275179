#pragma once
// What the nanoGPT reader's files share (internal to gpt2/io): numbers in
// the pickle, and nanoGPT's AdamW state_dict read by parameter name.

#include <optional>
#include <string>
#include <vector>

#include "gpt2/io/checkpoint/torch_archive.h"
#include "gpt2/io/nanogpt.h"
#include "gpt2/io/state_dict.h"

namespace gpt2::detail {

/// An int or float value as a double (nanoGPT's dropout may be 0 or 0.0).
std::optional<double> number(const PValue* v);
/// A 0-d tensor or a number, as best_val_loss and AdamW's step are.
std::optional<double> scalar(const TorchArchive& archive, const PValue* v);
/// nanoGPT's AdamW state_dict `opt`, its positions turned into names by
/// nanogpt_param_groups(config), each moment's shape held against
/// `weights`; problems appended to `problems`.
NanoGPTAdamW read_nanogpt_adamw(const TorchArchive& archive, const PValue& opt,
                                const GPTConfig& config, const StateDict& weights,
                                std::vector<std::string>& problems);

}  // namespace gpt2::detail
