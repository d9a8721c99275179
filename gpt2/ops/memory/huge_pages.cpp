// Mappings of their own for large tensors, and the measurement that decides
// whether they ask for huge pages (docs/cpu-kernels.md says why).
#include "gpt2/ops/memory.h"
#include "gpt2/ops/settings.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/ScalarTypeToTypeMeta.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>

#include "gpt2/error.h"
#include "gpt2/ops/torch_compat.h"

namespace gpt2 {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kPage = 4096;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// A 2 MiB-aligned anonymous mapping of `len` bytes (a multiple of 4 KiB), or
// nullptr with errno set.
void* map_aligned(size_t len) {
  void* raw = ::mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(begin, kHugePage);
  if (aligned > begin) ::munmap(raw, aligned - begin);
  const uintptr_t end = begin + len + kHugePage;
  if (end > aligned + len) ::munmap(reinterpret_cast<void*>(aligned + len), end - aligned - len);
  return reinterpret_cast<void*>(aligned);
}

// Milliseconds to write one byte of each 4 KiB page of a fresh `len`-byte
// mapping, on huge pages or (MADV_NOHUGEPAGE, whatever the kernel's default)
// on small ones; a negative value where the probe could not map.
double fault_in_ms(size_t len, bool huge) {
  void* p = map_aligned(len);
  if (!p) return -1;
  ::madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  auto* bytes = static_cast<volatile char*>(p);
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t at = 0; at < len; at += kPage) bytes[at] = 1;
  const auto t1 = std::chrono::steady_clock::now();
  ::munmap(p, len);
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

HugePagesChoice measure() {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string setting;
  if (!std::getline(thp, setting)) return {false, "this kernel has no transparent huge pages"};
  if (setting.find("[never]") != std::string::npos) {
    return {false, "transparent huge pages are off in this kernel"};
  }
  // Two huge pages' worth each way, alternating, up to three times; the
  // best of each. It stops early once one way is 4 times the other's. A
  // few ms where small pages fault fast, tens of ms where they are slow
  // (and huge pages then save far more: docs/cpu-kernels.md).
  constexpr size_t kProbe = 2 * kHugePage;
  double huge = 1e300, small = 1e300;
  for (int round = 0; round < 3; ++round) {
    const double h = fault_in_ms(kProbe, true), s = fault_in_ms(kProbe, false);
    if (h < 0 || s < 0) return {false, "the probe could not map 4 MiB"};
    huge = std::min(huge, h);
    small = std::min(small, s);
    if (huge * 4 <= small || small * 4 <= huge) break;
  }
  const bool on = huge * 2 <= small;
  return {on, fmt::format("4 MiB faulted in {:.2f} ms on huge pages, {:.2f} ms on 4 KiB pages",
                          huge, small)};
}

struct State {
  std::mutex mu;
  HugePages mode = HugePages::kAuto;
  std::optional<HugePagesChoice> measured;
};

State& state() {
  static State* s = new State;  // never destroyed: tensors may unmap late
  return *s;
}

void unmap_block(void* ctx) {
  auto* block = static_cast<LargeBlock*>(ctx);
  give_large(*block);
  delete block;
}

// The allocator of tensors made while huge pages are on. A block it makes
// later (a resize) follows the choice as it then stands; give_large frees
// either kind.
struct LargeAllocator final : compat::Allocator {
  c10::DataPtr allocate_bytes(size_t n) override {
    if (n < static_cast<size_t>(kLargeBytes)) return c10::GetCPUAllocator()->allocate(n);
    auto* block = new LargeBlock(take_large(n));
    return {block->data, block, &unmap_block, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
};

}  // namespace

HugePagesChoice huge_pages_choice() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.mode != HugePages::kAuto) {
    return {s.mode == HugePages::kOn, "set by set_huge_pages"};
  }
  if (!s.measured) {
    const char* env = std::getenv("GPT2_HUGE_PAGES");
    const std::string value = env ? env : "";
    if (value == "on" || value == "off") {
      s.measured = HugePagesChoice{value == "on", "GPT2_HUGE_PAGES=" + value};
    } else if (value.empty() || value == "auto") {
      s.measured = measure();
    } else {
      throw Error("GPT2_HUGE_PAGES must be on, off or auto (measure), got '" + value + "'");
    }
  }
  return *s.measured;
}

void set_huge_pages(HugePages mode) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.mode = mode;
}

std::string to_string(const HugePagesChoice& choice) {
  return fmt::format("{} ({})", choice.on ? "on" : "off", choice.reason);
}

LargeBlock take_large(size_t bytes) {
  // Rounding up and the alignment's slack must not wrap around.
  TORCH_CHECK(bytes <= SIZE_MAX - 2 * kHugePage, "gpt2: not enough memory for a block of ", bytes,
              " bytes");
  LargeBlock block{nullptr, bytes, huge_pages_choice().on};
  if (block.mapped) {
    const size_t len = round_up(std::max<size_t>(bytes, 1), kPage);
    block.data = map_aligned(len);
    // A hint: where the kernel refuses it, the block is on small pages.
    if (block.data) ::madvise(block.data, len, MADV_HUGEPAGE);
  } else if (::posix_memalign(&block.data, kHugePage, std::max<size_t>(bytes, 1)) != 0) {
    block.data = nullptr;
  }
  // As torch's own CPU allocator fails: a c10::Error with the size.
  TORCH_CHECK(block.data != nullptr, "gpt2: not enough memory for a block of ", bytes, " bytes");
  return block;
}

void give_large(const LargeBlock& block) {
  if (block.mapped) {
    ::munmap(block.data, round_up(std::max<size_t>(block.bytes, 1), kPage));
  } else {
    std::free(block.data);
  }
}

at::Tensor empty_large(at::IntArrayRef sizes, c10::optional<at::ScalarType> dtype_or_default) {
  const at::ScalarType dtype =
      dtype_or_default.value_or(c10::typeMetaToScalarType(c10::get_default_dtype()));
  // Negative sizes and products past int64 are left to torch::empty's errors.
  int64_t n = static_cast<int64_t>(c10::elementSize(dtype));
  bool odd = false;
  for (const int64_t s : sizes) odd = odd || s < 0 || __builtin_mul_overflow(n, s, &n);
  if (odd || n < kLargeBytes || !huge_pages_choice().on) {
    return at::empty(sizes, at::TensorOptions().dtype(dtype));
  }
  static LargeAllocator* allocator = new LargeAllocator;  // never destroyed, as the state
  return at::detail::empty_generic(sizes, allocator, c10::DispatchKeySet(c10::DispatchKey::CPU),
                                   dtype, c10::nullopt);
}

}  // namespace gpt2
