#pragma once
/// Memory for the library's large tensors, and how much this process may use.
/// The layers above call these (the loaders for weights, the optimizer for
/// its moments); where the blocks come from is the ops layer's choice
/// (HugePages in gpt2/ops/settings.h, docs/cpu-kernels.md).

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpt2 {

/// Tensors of at least this many bytes get a block of their own.
constexpr int64_t kLargeBytes = int64_t{2} << 20;

/// An uninitialized contiguous CPU tensor of `dtype` (torch's default dtype
/// when none, as torch::empty): in a mapping of its own on huge pages when
/// it holds kLargeBytes or more and huge_pages_choice() is on, else
/// torch::empty's. It frees and resizes as any CPU tensor.
at::Tensor empty_large(at::IntArrayRef sizes, c10::optional<at::ScalarType> dtype = c10::nullopt);

/// A block starting on a 2 MiB boundary: a mapping of its own on huge pages
/// when huge_pages_choice() is on, else glibc's (posix_memalign).
struct LargeBlock {
  void* data = nullptr;
  size_t bytes = 0;
  /// Whether it is a mapping of its own (else glibc's).
  bool mapped = false;
};
/// Takes a block of `bytes`. Throws c10::Error naming the size when there
/// is no memory for it, as torch's own allocator fails.
LargeBlock take_large(size_t bytes);
/// Frees a block take_large made, either kind.
void give_large(const LargeBlock& block);

/// How much memory this process may use.
struct MemoryLimit {
  /// Bytes this process may use; 0 when nothing could be read.
  double bytes = 0;
  /// Where the figure comes from, for messages: "this machine's memory" or
  /// "the limit in '/sys/fs/cgroup/.../memory.max'".
  std::string source;
};

/// The lowest of physical memory (sysconf) and every memory limit on this
/// process's control group and its parents: cgroup v2's `memory.max` and
/// cgroup v1's `memory.limit_in_bytes` ("max" and v1's 2^63-rounded
/// "unlimited" mean none). `proc_cgroup` and `cgroup_root` are where the
/// process's groups and their files are read from (tests point them at a
/// made-up tree); a file that is missing or unreadable adds no limit.
MemoryLimit usable_memory(const std::string& proc_cgroup = "/proc/self/cgroup",
                          const std::string& cgroup_root = "/sys/fs/cgroup");

}  // namespace gpt2
