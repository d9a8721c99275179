#include "apps/gpt2/runtime.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <malloc.h>

#include <cstdlib>

#include <filesystem>
#include <fstream>

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
  info.blas_library = loaded_blas_path();
  info.blas_kind = kind_of(info.blas_library);
  using GetThreads = int (*)();
  if (auto fn = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"))) {
    info.blas_threads = fn();
  }
  info.torch_threads = at::get_num_threads();
  return info;
}

bool keep_freed_memory() {
  if (std::getenv("MALLOC_MMAP_MAX_") || std::getenv("MALLOC_TRIM_THRESHOLD_")) return false;
  // No block gets its own mapping, and the heap's top is never given back.
  return mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, -1) == 1;
}

void set_compute_threads(int threads) {
  at::set_num_threads(threads);
  using SetThreads = void (*)(int);
  if (auto fn = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    fn(threads);
  }
}

}  // namespace gpt2
