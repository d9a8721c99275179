#include "gpt2/ops/memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace gpt2 {

namespace {

// The first 4 KiB of a kernel file (both cgroup files and /proc/self/cgroup
// are far shorter); empty when it cannot be read. O_NONBLOCK: a FIFO planted
// where a test tree points is not waited on.
std::string read_small(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return {};
  char buffer[4096];
  ssize_t n;
  do {
    n = ::read(fd, buffer, sizeof buffer);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

// A limit file's value in bytes; 0 for "max", v1's "unlimited" (2^63 rounded
// down to a page) and anything that is not a plain number.
double parse_limit(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(begin, &end, 10);
  if (end == begin || errno != 0 || (*end != '\n' && *end != '\0')) return 0;
  if (value >= (1ULL << 62)) return 0;
  return static_cast<double>(value);
}

void lower_to(MemoryLimit& limit, double bytes, std::string source) {
  if (bytes > 0 && (limit.bytes == 0 || bytes < limit.bytes)) {
    limit.bytes = bytes;
    limit.source = std::move(source);
  }
}

// `file` in `group` (a path inside the hierarchy mounted at `mount`) and in
// each of its parents up to the mount: a parent's limit binds its children.
void walk_up(MemoryLimit& limit, const std::string& mount, std::string group,
             const std::string& file) {
  while (true) {
    const std::string path = mount + (group == "/" ? "" : group) + "/" + file;
    lower_to(limit, parse_limit(read_small(path)), "the limit in '" + path + "'");
    if (group.empty() || group == "/") break;
    const size_t slash = group.find_last_of('/');
    group = slash == 0 || slash == std::string::npos ? "/" : group.substr(0, slash);
  }
}

}  // namespace

MemoryLimit usable_memory(const std::string& proc_cgroup, const std::string& cgroup_root) {
  MemoryLimit limit;
  const double pages = static_cast<double>(::sysconf(_SC_PHYS_PAGES));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  if (pages > 0 && page > 0) lower_to(limit, pages * page, "this machine's memory");

  // Lines of /proc/self/cgroup: "ID:CONTROLLERS:PATH"; cgroup v2's is "0::PATH".
  std::istringstream lines(read_small(proc_cgroup));
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string group = line.substr(second + 1);
    if (group.empty() || group[0] != '/') continue;
    if (controllers.empty()) {
      walk_up(limit, cgroup_root, group, "memory.max");
      walk_up(limit, cgroup_root + "/unified", group, "memory.max");  // v1 + v2 hybrids
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      walk_up(limit, cgroup_root + "/memory", group, "memory.limit_in_bytes");
    }
  }
  return limit;
}

}  // namespace gpt2
