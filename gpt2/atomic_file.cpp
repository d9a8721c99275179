#include "gpt2/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "gpt2/error.h"

namespace gpt2 {
namespace detail {
std::function<void(std::string_view step)> atomic_write_fault;
}  // namespace detail

namespace {

void step_done(std::string_view step) {
  if (detail::atomic_write_fault) detail::atomic_write_fault(step);
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("open {}: {}", path, std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error(fmt::format("fsync {}: {}", path, std::strerror(err)));
}

}  // namespace

void write_atomically(const std::string& path,
                      const std::function<void(const std::string& tmp_path)>& write) {
  const std::filesystem::path target(path);
  std::filesystem::path folder = target.parent_path();
  if (folder.empty()) folder = ".";
  std::string pattern = (folder / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw FileError(fmt::format("cannot write '{}': cannot create a temporary file in '{}': {}",
                                path, folder.string(), std::strerror(errno)));
  }
  // mkstemp makes the file 0600; give it the mode a plain create would.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  const std::string tmp(name.data());
  try {
    write(tmp);
    step_done("written");
    fsync_path(tmp, O_RDONLY);
    step_done("synced");
    std::filesystem::rename(tmp, target);
  } catch (const std::exception& e) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw FileError(fmt::format("cannot write '{}': {}", path, e.what()));
  }
  // The rename is durable once the folder's entry is; a failure here leaves
  // the new file in place, so it is not reported as a failed write.
  try {
    fsync_path(folder.string(), O_RDONLY | O_DIRECTORY);
  } catch (const std::exception&) {
  }
}

}  // namespace gpt2
