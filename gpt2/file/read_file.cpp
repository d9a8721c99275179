#include "gpt2/file/read_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "gpt2/error.h"

namespace gpt2 {
namespace {

// Opens `path` for reading without blocking on a FIFO and checks, on the
// descriptor, that it is a regular file. Returns the descriptor and fills
// `st`; throws FileError worded by `fail`.
template <class Fail>
int open_regular(const std::string& path, struct stat& st, const Fail& fail) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw fail(errno_text(errno));
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw fail(errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw fail(fmt::format("it is {}, not a regular file", file_kind(st.st_mode)));
  }
  return fd;
}

}  // namespace

std::string errno_text(int err) {
  const char* name = ::strerrorname_np(err);
  return fmt::format("{} ({})", std::strerror(err), name ? name : "?");
}

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string read_file(const std::string& path, std::string_view what, uint64_t max_bytes) {
  const auto fail = [&](const std::string& reason) {
    return FileError(fmt::format("cannot read {}{}'{}': {}", what, what.empty() ? "" : " ", path,
                                 reason));
  };
  struct stat st {};
  const int fd = open_regular(path, st, fail);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    throw fail(fmt::format("it holds {} bytes, more than the {} allowed", size, max_bytes));
  }
  // Read to the end, not to st_size: the file may have changed since; never
  // past max_bytes.
  std::string bytes(static_cast<size_t>(size), '\0');
  size_t done = 0;
  for (;;) {
    if (done == bytes.size()) {
      if (bytes.size() >= max_bytes) break;
      bytes.resize(static_cast<size_t>(std::min<uint64_t>(max_bytes, bytes.size() + 65536)));
    }
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw fail(errno_text(err));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  char probe = 0;
  const bool more = done == max_bytes && ::read(fd, &probe, 1) == 1;
  ::close(fd);
  if (more) throw fail(fmt::format("it grew past the {} bytes allowed while being read", max_bytes));
  bytes.resize(done);
  return bytes;
}

void require_regular_file(const std::string& path) {
  const auto fail = [&](const std::string& reason) {
    return FileError(fmt::format("cannot read '{}': {}", path, reason));
  };
  struct stat st {};
  ::close(open_regular(path, st, fail));
}

}  // namespace gpt2
