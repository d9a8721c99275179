#include "apps/gpt2/runtime.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

namespace gpt2 {
namespace {

// The set-up installs OpenBLAS; LibTorch must have loaded it, not the
// reference BLAS that runs matmuls ~26x slower.
TEST(Runtime, ReportsTheLoadedBlas) {
  torch::mm(torch::ones({64, 64}), torch::ones({64, 64}));  // make sure BLAS is in use
  RuntimeInfo info = runtime_info();
  EXPECT_NE(info.blas_library, "unknown");
  EXPECT_EQ(info.blas_kind, "OpenBLAS") << info.blas_library;
  EXPECT_GE(info.blas_threads, 1);
  EXPECT_GE(info.torch_threads, 1);
}

}  // namespace
}  // namespace gpt2
