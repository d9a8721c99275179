#pragma once
// A checkpoint's optimizer state: the archive Optimizer::save wrote, kept
// as bytes and restored through LibTorch after the archive gate passed it.

#include <torch/optim/optimizer.h>

#include <string>
#include <string_view>

namespace gpt2::detail {

/// Loads the optimizer archive `bytes` (validated by the caller) into
/// `optimizer`, all or nothing; CheckpointError naming `path` otherwise.
void restore_optimizer(std::string_view bytes, const std::string& path,
                       torch::optim::Optimizer& optimizer);

}  // namespace gpt2::detail
