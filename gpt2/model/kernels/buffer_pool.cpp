// A free list of large blocks by size, behind a c10::Allocator so the
// tensors made from it resize and free as any CPU tensor does.
#include "gpt2/model/kernels/buffer_pool.h"
#include "gpt2/model/kernels/buffer_pool_detail.h"
#include "gpt2/model/kernels/huge_pages.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/types.h>

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "gpt2/error.h"
#include "gpt2/model/memory_limit.h"

namespace gpt2 {
namespace {

// Sizes are rounded up to whole 2 MiB: requests of nearly the same size
// share blocks.
constexpr size_t kGrain = size_t{2} << 20;

using detail::LargeBlock;

class Pool {
 public:
  LargeBlock take(size_t size) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end()) {
        const LargeBlock block = it->second;
        free_.erase(it);
        free_bytes_ -= size;
        return block;
      }
    }
    // On huge pages where they fault faster (huge_pages.h).
    return detail::take_large(size);
  }

  void give(const LargeBlock& block) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (free_bytes_ + block.bytes <= cap_locked()) {
        free_.emplace(block.bytes, block);
        free_bytes_ += block.bytes;
        return;
      }
    }
    detail::give_large(block);
  }

  KernelMemory stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {static_cast<int64_t>(free_bytes_), static_cast<int64_t>(free_.size()),
            static_cast<int64_t>(cap_locked())};
  }

  // Frees blocks, largest first, until at most `keep` bytes are held.
  void trim(size_t keep) {
    std::multimap<size_t, LargeBlock> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (free_bytes_ > keep && !free_.empty()) {
        auto last = std::prev(free_.end());
        free_bytes_ -= last->first;
        drop.insert(*last);
        free_.erase(last);
      }
    }
    for (const auto& [size, block] : drop) detail::give_large(block);
  }

  void set_cap(int64_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cap_ = bytes;
    }
    trim(static_cast<size_t>(stats().cap_bytes));
  }

 private:
  size_t cap_locked() {
    if (cap_ >= 0) return static_cast<size_t>(cap_);
    static const size_t by_default = static_cast<size_t>(usable_memory().bytes / 8);
    return by_default;
  }

  std::mutex mu_;
  std::multimap<size_t, LargeBlock> free_;
  size_t free_bytes_ = 0;
  int64_t cap_ = -1;  // -1: the default
};

std::atomic<HeapPolicy> g_heap{HeapPolicy::kUntouched};

// Once, at the pool's first block: see HeapPolicy in buffer_pool.h.
void bound_heap_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    HeapPolicy untouched = HeapPolicy::kUntouched;
    if (detail::malloc_tuned_by_environment()) {
      g_heap.compare_exchange_strong(untouched, HeapPolicy::kApps);
    } else if (g_heap.compare_exchange_strong(untouched, HeapPolicy::kBounded) &&
               !(mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 &&
                 mallopt(M_TRIM_THRESHOLD, 256 << 20) == 1)) {
      g_heap.store(HeapPolicy::kUntouched);  // glibc refused: say so
    }
  });
}

// Never destroyed: a tensor may free its block after static destruction.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

void give_back(void* ctx) {
  auto* block = static_cast<LargeBlock*>(ctx);
  pool().give(*block);
  delete block;
}

struct PoolAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) const override {
    if (n < static_cast<size_t>(detail::kPooledBytes)) return c10::GetCPUAllocator()->allocate(n);
    bound_heap_once();
    const size_t size = (n + kGrain - 1) / kGrain * kGrain;
    auto* block = new LargeBlock(pool().take(size));
    return {block->data, block, &give_back, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
};

}  // namespace

bool detail::malloc_tuned_by_environment() {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_MAX_",
                           "MALLOC_TOP_PAD_"}) {
    if (std::getenv(name)) return true;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables && std::string_view(tunables).find("glibc.malloc.") != std::string_view::npos;
}

at::Tensor detail::empty_pooled(at::IntArrayRef sizes) {
  int64_t n = 1;
  for (const int64_t s : sizes) n *= s;
  if (n * static_cast<int64_t>(sizeof(float)) < kPooledBytes) return torch::empty(sizes);
  static PoolAllocator* allocator = new PoolAllocator;  // never destroyed, as the pool
  return at::detail::empty_generic(sizes, allocator, c10::DispatchKeySet(c10::DispatchKey::CPU),
                                   c10::ScalarType::Float, c10::nullopt);
}

KernelMemory kernel_memory() { return pool().stats(); }

void release_kernel_memory() { pool().trim(0); }

void set_kernel_memory_cap(int64_t bytes) {
  if (bytes < -1) {
    throw Error("kernel memory cap must be -1 (the default), 0 (keep nothing) or a byte count, "
                "got " + std::to_string(bytes));
  }
  pool().set_cap(bytes);
}

HeapPolicy heap_policy() { return g_heap.load(); }

const char* to_string(HeapPolicy policy) {
  switch (policy) {
    case HeapPolicy::kUntouched: return "glibc's default";
    case HeapPolicy::kBounded: return "bounded";
    case HeapPolicy::kApps: return "the app's";
  }
  return "?";
}

void leave_heap_policy_to_app() { g_heap.store(HeapPolicy::kApps); }

}  // namespace gpt2
