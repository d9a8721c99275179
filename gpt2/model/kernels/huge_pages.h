#pragma once
/// Fresh memory for the library's large tensors, on transparent huge pages
/// where they fault faster.
///
/// Every page a process writes for the first time costs the kernel a page
/// fault. How much differs by machine more than anything else the library
/// meets: writing 500 MB of fresh memory took 0.3 s on an AMD EPYC (Zen 4)
/// virtual machine and 1.3-1.6 s on an AMD EPYC (Zen 5) one, where the same
/// memory on 2 MiB huge pages took 0.05-0.6 s. A 124M model is 500 MB of
/// weights, so this decides how fast a model loads or is built.
///
/// Whether the library's large tensors (weights it builds or loads, their
/// packed bf16/int8 copies, FusedAdamW's moments, the kernels' pooled
/// blocks) go on huge pages is measured once per process, at the first
/// large tensor: the same few MiB are faulted in on huge and on small
/// pages, alternating, and huge pages are taken only where they were at
/// least twice as fast. Then each large tensor gets a 2 MiB-aligned mapping
/// of its own that asks for them (MADV_HUGEPAGE), unmapped when the tensor
/// goes. Otherwise they are glibc's, as any tensor's, and reuse the heap
/// glibc keeps (a process that loads a model again and again keeps its
/// pages faulted in that way). GPT2_HUGE_PAGES=on or off in the
/// environment replaces the measurement, and set_huge_pages() forces either
/// way. docs/speed.md has the figures.

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpt2 {

enum class HugePages { kAuto, kOn, kOff };

struct HugePagesChoice {
  bool on = false;
  /// Why: the measurement ("4 MiB faulted in 0.25 ms on huge pages, 10.94 ms
  /// on 4 KiB pages"), the kernel's setting, GPT2_HUGE_PAGES, or "set by
  /// set_huge_pages".
  std::string reason;
};

/// The choice for this process: the one set_huge_pages() forced, else
/// GPT2_HUGE_PAGES (on, off, auto), else the measurement (made at the first
/// call). Throws gpt2::Error for another GPT2_HUGE_PAGES value.
HugePagesChoice huge_pages_choice();

/// Forces huge pages on or off for mappings made from here on, or (kAuto)
/// goes back to the measurement.
void set_huge_pages(HugePages mode);

/// "on" or "off" and the reason, for the runtime line.
std::string to_string(const HugePagesChoice& choice);

namespace detail {

/// Tensors of at least this many bytes get a mapping of their own.
constexpr int64_t kLargeBytes = int64_t{2} << 20;

/// An uninitialized contiguous CPU tensor of `dtype` (torch's default dtype
/// when none, as torch::empty): in a mapping of its own on huge pages when
/// it holds kLargeBytes or more and huge_pages_choice() is on, else
/// torch::empty's. It frees and resizes as any CPU tensor.
at::Tensor empty_large(at::IntArrayRef sizes,
                       c10::optional<at::ScalarType> dtype = c10::nullopt);

/// A block starting on a 2 MiB boundary: a mapping of its own on huge pages
/// when huge_pages_choice() is on, else glibc's (posix_memalign). Throws
/// c10::Error naming the size when there is no memory for it, as torch's own
/// allocator fails. give_large frees it either way.
struct LargeBlock {
  void* data = nullptr;
  size_t bytes = 0;
  bool mapped = false;
};
LargeBlock take_large(size_t bytes);
void give_large(const LargeBlock& block);

}  // namespace detail
}  // namespace gpt2
