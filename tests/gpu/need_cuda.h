#pragma once
// The CUDA tests' guard: each skips, saying why, where torch sees no GPU.

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/types.h>

/// Skips the running test where torch::cuda::is_available() is false (CI,
/// a CPU-only LibTorch); tests/gpu/run.sh runs them on a GPU machine.
#define NEED_CUDA()                                                                      \
  if (!torch::cuda::is_available()) {                                                    \
    GTEST_SKIP() << "no CUDA GPU here (torch::cuda::is_available() is false): this test " \
                    "runs on a GPU machine (tests/gpu/run.sh)";                           \
  }

namespace gpt2 {
/// The first GPU, where the CUDA tests run.
inline const torch::Device kCuda(torch::kCUDA, 0);
}  // namespace gpt2
