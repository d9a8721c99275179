// A library changes nothing process-wide that the app did not ask for: an
// app that links gpt2, builds a model and trains it keeps glibc's malloc
// settings and torch's thread counts; configure_runtime() is the one call
// that changes them. ctest runs this suite in a process of its own, so
// nothing before it chose.
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>

#include "gpt2/model/gpt.h"
#include "gpt2/ops/settings.h"
#include "gpt2/runtime/runtime.h"
#include "gpt2/train/optim.h"
#include "test_util.h"

namespace {
std::atomic<int> g_mallopt_calls{0};
}  // namespace

// Every mallopt call of this program, the library's included, comes here
// first (the program's own definition wins at link time); it counts the call
// and hands it to glibc's.
extern "C" int mallopt(int param, int value) {
  g_mallopt_calls.fetch_add(1);
  using Mallopt = int (*)(int, int);
  static const auto real = reinterpret_cast<Mallopt>(dlsym(RTLD_NEXT, "mallopt"));
  return real ? real(param, value) : 0;
}

namespace gpt2 {
namespace {

TEST(ProcessWide, ADefaultSettingsAppKeepsGlibcsHeapAndTorchsThreads) {
  const int torch_threads = at::get_num_threads(), omp_threads = omp_get_max_threads();
  const int calls = g_mallopt_calls.load();
  // Logits of 4 x 64 x 16,384 floats (16 MiB): the kernels' pool serves them.
  GPT model(testing::tiny_config().vocab_size(16384).block_size(64).init(InitOptions().seed(1)));
  auto optimizer = configure_optimizers(*model, torch::optim::AdamWOptions(1e-3));
  auto idx = torch::randint(16384, {4, 64});
  for (int step = 0; step < 2; ++step) {
    optimizer->zero_grad();
    model->forward(idx, idx).loss.backward();
    optimizer->step();
  }
  EXPECT_GT(kernel_memory().free_blocks, 0) << "the step did not reach the pool";
  EXPECT_EQ(g_mallopt_calls.load(), calls) << "the library called mallopt on its own";
  EXPECT_EQ(heap_policy(), malloc_tuned_by_environment() ? HeapPolicy::kApps
                                                         : HeapPolicy::kUntouched);
  EXPECT_EQ(at::get_num_threads(), torch_threads);
  EXPECT_EQ(omp_get_max_threads(), omp_threads);

  // The app asks: then glibc's policy is set (unless the environment set it).
  configure_runtime();
  EXPECT_EQ(g_mallopt_calls.load() > calls, !malloc_tuned_by_environment());
  EXPECT_EQ(heap_policy(), HeapPolicy::kApps);
}

}  // namespace
}  // namespace gpt2
