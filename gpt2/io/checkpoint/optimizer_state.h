#pragma once
// A checkpoint's optimizer state: the archive Optimizer::save wrote, kept
// as bytes and restored through LibTorch after the archive gate passed it.

#include <torch/optim/optimizer.h>

#include <string>
#include <string_view>

namespace gpt2::detail {

/// The archive Optimizer::save writes, as bytes, with every state tensor
/// written from the CPU (the archive gate reads CPU storages only), so a
/// GPU run's optimizer loads anywhere (detail::host_tensor). `optimizer` is
/// as it was after. FileError naming `path` where a moment's values cannot
/// be read (the meta device).
std::string optimizer_bytes(const torch::optim::Optimizer& optimizer, const std::string& path);

/// Loads the optimizer archive `bytes` (validated by the caller) into
/// `optimizer`, all or nothing; CheckpointError naming `path` otherwise.
/// Each state tensor is placed on its parameter's device.
void restore_optimizer(std::string_view bytes, const std::string& path,
                       torch::optim::Optimizer& optimizer);

}  // namespace gpt2::detail
