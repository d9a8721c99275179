#include "gpt2/runtime/runtime.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <malloc.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>

#include <filesystem>
#include <fstream>

#include "gpt2/error.h"

namespace gpt2 {
namespace {

std::string loaded_blas_path() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string name = std::filesystem::path(path).filename().string();
    if (name.rfind("libblas", 0) == 0 || name.rfind("libopenblas", 0) == 0 ||
        name.rfind("libmkl_rt", 0) == 0 || name.rfind("libblis", 0) == 0) {
      std::error_code ec;
      auto real = std::filesystem::canonical(path, ec);
      return ec ? path : real.string();
    }
  }
  return "unknown";
}

std::string kind_of(const std::string& path) {
  if (path.find("openblas") != std::string::npos) return "OpenBLAS";
  if (path.find("mkl") != std::string::npos) return "MKL";
  if (path.find("blis") != std::string::npos) return "BLIS";
  if (path.find("/blas/") != std::string::npos) return "reference";
  return "unknown";
}

}  // namespace

RuntimeInfo runtime_info() {
  RuntimeInfo info;
  info.torch_version = TORCH_VERSION;
  info.blas_library = loaded_blas_path();
  info.blas_kind = kind_of(info.blas_library);
  using GetThreads = int (*)();
  // PyTorch's own builds (a pip wheel) carry MKL inside libtorch_cpu.so: no
  // BLAS library is mapped, and MKL's symbols are libtorch_cpu's.
  void* mkl = dlsym(RTLD_DEFAULT, "mkl_get_max_threads");
  Dl_info where{};
  if (info.blas_kind == "unknown" && mkl && dladdr(mkl, &where) && where.dli_fname) {
    info.blas_library = where.dli_fname;
    info.blas_kind = "MKL";
    info.blas_threads = reinterpret_cast<GetThreads>(mkl)();
  }
  if (auto fn = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"))) {
    info.blas_threads = fn();
  }
  using GetCore = char* (*)();
  if (auto fn = reinterpret_cast<GetCore>(dlsym(RTLD_DEFAULT, "openblas_get_corename"))) {
    info.blas_core = fn();
  }
  info.torch_threads = at::get_num_threads();
  info.kernel_threads = kernel_threads();
  const BackendChoice choice = matmul_backend_choice();
  info.products = choice.backend;
  info.products_reason = choice.reason;
  info.heap = heap_policy();
  info.huge_pages = huge_pages_choice();
  return info;
}

std::string better_blas_core(const RuntimeInfo& info) {
  if (!is_generic_openblas_core(info.blas_core)) return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
  if (__builtin_cpu_supports("avx2")) return "Haswell";
  return "";
}

int default_threads(int64_t local_world_size) {
  if (const char* omp = std::getenv("OMP_NUM_THREADS"); omp && std::atoi(omp) > 0) {
    return std::atoi(omp);  // per process, as torchrun sets it
  }
  return static_cast<int>(
      std::max<int64_t>(1, usable_cores() / std::max<int64_t>(1, local_world_size)));
}

bool keep_freed_memory() {
  leave_heap_policy_to_app();
  if (malloc_tuned_by_environment()) return false;
  // No block gets its own mapping, and the heap's top is never given back.
  return mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, -1) == 1;
}

void set_compute_threads(int threads) {
  at::set_num_threads(threads);
  set_kernel_threads(threads);
  using SetThreads = void (*)(int);
  if (auto fn = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    fn(threads);
  }
}

std::string runtime_line(const RuntimeInfo& info) {
  return fmt::format(
      "LibTorch {}; BLAS {} ({} kernels), {} threads; products {} ({}), {} threads; torch intra-op "
      "threads {}; heap {}; huge pages {}",
      info.torch_version, info.blas_kind, info.blas_core.empty() ? "?" : info.blas_core, info.blas_threads,
      to_string(info.products), info.products_reason, info.kernel_threads, info.torch_threads,
      to_string(info.heap), to_string(info.huge_pages));
}

RuntimeInfo configure_runtime(const RuntimeOptions& options) {
  if (options.threads < 0 || options.local_world_size < 1) {
    throw Error(fmt::format("configure_runtime: threads must be 0 (default) or more and "
                            "local_world_size 1 or more, got threads {} local_world_size {}",
                            options.threads, options.local_world_size));
  }
  set_compute_threads(options.threads > 0 ? options.threads
                                          : default_threads(options.local_world_size));
  if (options.keep_freed_memory) keep_freed_memory();
  return runtime_info();
}

}  // namespace gpt2
