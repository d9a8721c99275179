#pragma once
/// Tensor shapes in messages, written one way everywhere: `[2, 16, 32]`.

#include <torch/types.h>

#include <string>

namespace gpt2 {

/// `[d0, d1, ...]`, as torch prints sizes; `[]` for a scalar.
std::string shape_of(const torch::Tensor& t);

}  // namespace gpt2
