#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gpt2/ops/memory.h"
#include "test_util.h"

namespace gpt2 {
namespace {

void write_text(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST(MemoryLimit, TheLowestLimitOnTheGroupOrItsParentsWins) {
  testing::TempDir tmp;
  const double physical = usable_memory(tmp / "none", tmp / "none").bytes;
  ASSERT_GT(physical, 1e8);  // sysconf's figure alone: no cgroup files found
  EXPECT_EQ(usable_memory(tmp / "none", tmp / "none").source, "this machine's memory");

  // cgroup v2: the job's group says "max", its parent 1 GiB; the parent binds.
  write_text(tmp / "v2/proc", "0::/batch/job\n");
  write_text(tmp / "v2/root/batch/job/memory.max", "max\n");
  write_text(tmp / "v2/root/batch/memory.max", "1073741824\n");
  MemoryLimit v2 = usable_memory(tmp / "v2/proc", tmp / "v2/root");
  EXPECT_EQ(v2.bytes, 1073741824.0);
  EXPECT_EQ(v2.source, "the limit in '" + tmp / "v2/root/batch/memory.max" + "'");

  // cgroup v1: only the memory controller's line counts; v1's "unlimited"
  // (2^63 rounded to a page) is no limit; the group's own 512 MiB binds.
  write_text(tmp / "v1/proc", "4:cpu,cpuacct:/c\n3:memory:/c/d\n0::/\n");
  write_text(tmp / "v1/root/memory/memory.limit_in_bytes", "9223372036854771712\n");
  write_text(tmp / "v1/root/memory/c/d/memory.limit_in_bytes", "536870912\n");
  write_text(tmp / "v1/root/cpu/c/memory.limit_in_bytes", "1\n");  // not the memory controller
  MemoryLimit v1 = usable_memory(tmp / "v1/proc", tmp / "v1/root");
  EXPECT_EQ(v1.bytes, 536870912.0);
  EXPECT_NE(v1.source.find("memory/c/d/memory.limit_in_bytes"), std::string::npos) << v1.source;

  // Garbage and a limit above physical memory change nothing.
  write_text(tmp / "bad/proc", "no colons\n0::/g\n");
  write_text(tmp / "bad/root/g/memory.max", "12abc\n");
  write_text(tmp / "bad/root/memory.max", "1152921504606846975\n");  // 2^60 - 1: above any RAM
  EXPECT_EQ(usable_memory(tmp / "bad/proc", tmp / "bad/root").bytes, physical);
}

}  // namespace
}  // namespace gpt2
