#include "gpt2/runtime/runtime.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "gpt2/error.h"
#include "gpt2/ops/settings.h"

namespace gpt2 {
namespace {

// The set-up installs OpenBLAS; LibTorch must have loaded it, not the
// reference BLAS that runs matmuls ~26x slower.
TEST(Runtime, ReportsTheLoadedBlas) {
  torch::mm(torch::ones({64, 64}), torch::ones({64, 64}));  // make sure BLAS is in use
  RuntimeInfo info = runtime_info();
  EXPECT_NE(info.blas_library, "unknown");
  // Debian's LibTorch calls the system BLAS (setup.sh installs OpenBLAS); a
  // pip wheel's carries MKL inside libtorch_cpu.so, whose symbols say so.
  const bool mkl_inside = dlsym(RTLD_DEFAULT, "openblas_get_num_threads") == nullptr &&
                          dlsym(RTLD_DEFAULT, "mkl_get_max_threads") != nullptr;
  EXPECT_EQ(info.blas_kind, mkl_inside ? "MKL" : "OpenBLAS") << info.blas_library;
  EXPECT_GE(info.blas_threads, 1);
  EXPECT_GE(info.torch_threads, 1);
}

// Threads follow the cores this process may use, not the machine's: with the
// affinity mask cut to one CPU, one thread (hardware_concurrency() says 2).
TEST(Runtime, DefaultThreadsFollowTheAffinityMaskAndOmpNumThreads) {
  // The test sets and clears OMP_NUM_THREADS itself (a suite run under
  // OMP_NUM_THREADS=1 or 2 gets its value back at the end).
  const char* given = std::getenv("OMP_NUM_THREADS");
  const std::optional<std::string> caller = given ? std::optional<std::string>(given) : std::nullopt;
  ::unsetenv("OMP_NUM_THREADS");
  cpu_set_t saved;
  ASSERT_EQ(::sched_getaffinity(0, sizeof saved, &saved), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &saved)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  const int on_one = default_threads();
  const int two_ranks = default_threads(2);
  ::setenv("OMP_NUM_THREADS", "3", 1);
  const int from_env = default_threads(2);
  ::unsetenv("OMP_NUM_THREADS");
  ASSERT_EQ(::sched_setaffinity(0, sizeof saved, &saved), 0);
  EXPECT_EQ(on_one, 1);
  EXPECT_EQ(two_ranks, 1);  // never 0
  const int all = default_threads();
  if (caller) ::setenv("OMP_NUM_THREADS", caller->c_str(), 1);
  EXPECT_EQ(from_env, 3);
  EXPECT_EQ(all, CPU_COUNT(&saved));
}

TEST(Runtime, RuntimeLineNamesKernelsAndProducts) {
  RuntimeInfo info;
  info.torch_version = "2.6.0";
  info.blas_kind = "OpenBLAS";
  info.blas_core = "Prescott";
  info.blas_threads = 2;
  info.torch_threads = 1;
  info.kernel_threads = 2;
  info.products = MatmulBackend::kOneDnn;
  info.products_reason = "OpenBLAS runs its generic Prescott kernels";
  info.heap = HeapPolicy::kApps;
  info.huge_pages = {true, "set by set_huge_pages"};
  EXPECT_EQ(runtime_line(info),
            "LibTorch 2.6.0; BLAS OpenBLAS (Prescott kernels), 2 threads; products onednn (OpenBLAS runs its "
            "generic Prescott kernels), 2 threads; torch intra-op threads 1; heap the app's; "
            "huge pages on (set by set_huge_pages)");
}

// The snapshot reports what the process runs: the rule's choice until one
// is forced, and the forced one with its reason after.
TEST(Runtime, InfoReportsTheProductChoiceAndItsReason) {
  const RuntimeInfo before = runtime_info();
  EXPECT_EQ(before.products, choose_matmul_backend().backend);
  EXPECT_EQ(before.products_reason, choose_matmul_backend().reason);
  EXPECT_FALSE(before.products_reason.empty());
  set_matmul_backend(MatmulBackend::kTorch);
  const RuntimeInfo forced = runtime_info();
  reset_matmul_backend();
  EXPECT_EQ(forced.products, MatmulBackend::kTorch);
  EXPECT_EQ(forced.products_reason, "set by set_matmul_backend");
  EXPECT_EQ(runtime_info().products, before.products);
}

// configure_runtime() sets the three pools to one count and refuses
// nonsense; the count comes back as the process stood.
TEST(Runtime, ConfigureRuntimeSetsEveryPool) {
  const int torch_before = at::get_num_threads(), kernels_before = kernel_threads();
  const RuntimeInfo info = configure_runtime(RuntimeOptions{3, 1, false});
  EXPECT_EQ(info.torch_threads, 3);
  EXPECT_EQ(info.kernel_threads, 3);
  if (info.blas_kind == "OpenBLAS") {
    EXPECT_EQ(info.blas_threads, 3);
  }
  EXPECT_THROW(configure_runtime(RuntimeOptions{-1, 1, false}), Error);
  EXPECT_THROW(configure_runtime(RuntimeOptions{0, 0, false}), Error);
  set_compute_threads(torch_before);
  set_kernel_threads(0);
  EXPECT_EQ(kernel_threads(), kernels_before);
  EXPECT_EQ(at::get_num_threads(), torch_before);
}

}  // namespace
}  // namespace gpt2
