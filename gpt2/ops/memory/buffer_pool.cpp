// A free list of large blocks by size, behind a c10::Allocator so the
// tensors made from it resize and free as any CPU tensor does.
#include "gpt2/ops/memory/buffer_pool.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/types.h>

#include <atomic>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "gpt2/error.h"
#include "gpt2/ops/memory.h"
#include "gpt2/ops/settings.h"
#include "gpt2/ops/torch_compat.h"

namespace gpt2 {
namespace {

// Sizes are rounded up to whole 2 MiB: requests of nearly the same size
// share blocks.
constexpr size_t kGrain = size_t{2} << 20;


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
    // On huge pages where they fault faster (take_large, gpt2/ops/memory.h).
    return take_large(size);
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
    give_large(block);
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
    for (const auto& [size, block] : drop) give_large(block);
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

std::atomic<bool> g_app_took_heap{false};

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

struct PoolAllocator final : compat::Allocator {
  c10::DataPtr allocate_bytes(size_t n) override {
    if (n < static_cast<size_t>(detail::kPooledBytes)) return c10::GetCPUAllocator()->allocate(n);
    const size_t size = (n + kGrain - 1) / kGrain * kGrain;
    auto* block = new LargeBlock(pool().take(size));
    return {block->data, block, &give_back, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
};

}  // namespace

bool malloc_tuned_by_environment() {
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

HeapPolicy heap_policy() {
  return g_app_took_heap.load() || malloc_tuned_by_environment() ? HeapPolicy::kApps
                                                                 : HeapPolicy::kUntouched;
}


void leave_heap_policy_to_app() { g_app_took_heap.store(true); }

}  // namespace gpt2
