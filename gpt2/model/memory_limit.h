#pragma once
/// How much memory this process may use: the machine's physical memory, or
/// less where a control group (a container, a systemd unit, a batch job's
/// slot) sets a lower limit. The model's size check (check_fits_in_memory)
/// compares against it, so a size typo in a container fails at once with
/// the container's figure instead of meeting the OOM killer later. This is
/// the one machine fact the core reads.

#include <string>

namespace gpt2 {

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
