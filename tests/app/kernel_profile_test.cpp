// `bench train --profile-steps`'s table: the largest kernels with their
// shares of the step's device time, the rest in one row; and the profiler
// refuses a step that puts nothing on a GPU rather than print an empty table.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "apps/gpt2/bench/kernel_profile.h"
#include "gpt2/error.h"

namespace gpt2::app {
namespace {

KernelProfile three_kernels() {
  KernelProfile p;
  p.steps = 4;
  p.kernels = {{"gemm_bf16", 600, 3}, {"layer_norm", 300, 2}, {"elementwise_add", 100, 5}};
  p.device_us_per_step = 1000;
  p.calls_per_step = 10;
  return p;
}

TEST(KernelTable, ListsTheLargestWithTheirSharesAndTheRestInOneRow) {
  const std::string table = kernel_table(three_kernels(), 2);
  EXPECT_NE(table.find("device time 1.00 ms a step in 10 launches"), std::string::npos) << table;
  EXPECT_NE(table.find("600.0 us  60.0%    3.0x  gemm_bf16"), std::string::npos) << table;
  EXPECT_NE(table.find("300.0 us  30.0%    2.0x  layer_norm"), std::string::npos) << table;
  EXPECT_EQ(table.find("elementwise_add"), std::string::npos) << table;
  EXPECT_NE(table.find("100.0 us  10.0%    5.0x  (1 other names)"), std::string::npos) << table;
}

TEST(KernelTable, CutsLongNames) {
  KernelProfile p = three_kernels();
  p.kernels[0].name = std::string(300, 'k');
  const std::string table = kernel_table(p, 3);
  EXPECT_NE(table.find(std::string(97, 'k') + "...\n"), std::string::npos) << table;
  EXPECT_EQ(table.find(std::string(98, 'k')), std::string::npos) << table;
}

TEST(KernelProfile, AStepOnTheCpuIsRefusedNotAnEmptyTable) {
  auto a = torch::randn({64, 64});
  int runs = 0;
  try {
    profile_kernels([&] { a = torch::mm(a, a).tanh(); ++runs; }, 2);
    FAIL() << "a CPU step gave a kernel table";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("no device event in 2 steps") != std::string::npos ||
                what.find("did not start") != std::string::npos) << what;
  }
  EXPECT_LE(runs, 2);
  EXPECT_THROW(profile_kernels([] {}, 0), Error);
}

}  // namespace
}  // namespace gpt2::app
