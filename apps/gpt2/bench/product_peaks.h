#pragma once
// The matrix-product peaks `gpt2 bench train` measures a step's model FLOP/s
// against, in the same run.

#include <torch/types.h>

#include <optional>

#include "gpt2/ops/settings.h"

namespace gpt2::app {

/// FLOP/s of an 8192^2 product in `dtype` on a GPU, median of 10 after
/// three to warm up: the peak a GPU step's MFU is measured against.
double device_matmul_peak(const torch::Device& device, torch::ScalarType dtype);

/// Bytes a second that a 1 GiB device-to-device copy reads and writes,
/// median of 5 after two to warm up: the memory-bound kernels' floor. 0
/// where the device has no 2 GiB free for it.
double device_copy_bandwidth(const torch::Device& device);

/// Float32 FLOP/s of a 2048^2 product, median of 5 after one to warm up:
/// through torch::mm (the system BLAS), or ops::linear on `backend`.
double matmul_peak(std::optional<MatmulBackend> backend);

}  // namespace gpt2::app
