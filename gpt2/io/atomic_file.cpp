#include "gpt2/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "gpt2/error.h"
#include "gpt2/io/detail/atomic_write_fault.h"

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

// Creates a new, empty file beside `target` and returns its path. open()
// applies the umask to mode 0666, as for any new file; an existing target's
// permissions are carried over, so replacing a 0600 file keeps it 0600.
std::string create_temporary(const std::filesystem::path& target,
                             const std::filesystem::path& folder) {
  static std::atomic<unsigned> counter{0};
  struct stat existing {};
  const bool replace = ::stat(target.c_str(), &existing) == 0;
  for (int attempt = 0;; ++attempt) {
    const std::string tmp =
        (folder / fmt::format(".{}.tmp-{}-{}", target.filename().string(), ::getpid(), counter++))
            .string();
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST && attempt < 100) continue;
    if (fd < 0) {
      throw FileError(fmt::format("cannot write '{}': cannot create a temporary file in '{}': {}",
                                  target.string(), folder.string(), std::strerror(errno)));
    }
    const bool mode_ok = !replace || ::fchmod(fd, existing.st_mode & 07777) == 0;
    const int err = errno;
    ::close(fd);
    if (!mode_ok) {
      ::unlink(tmp.c_str());
      throw FileError(fmt::format("cannot write '{}': cannot set the mode of '{}': {}",
                                  target.string(), tmp, std::strerror(err)));
    }
    return tmp;
  }
}

}  // namespace

void write_atomically(const std::string& path,
                      const std::function<void(const std::string& tmp_path)>& write) {
  const std::filesystem::path target(path);
  std::filesystem::path folder = target.parent_path();
  if (folder.empty()) folder = ".";
  const std::string tmp = create_temporary(target, folder);
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

void write_file_atomically(const std::string& path, std::string_view bytes) {
  write_atomically(path, [&](const std::string& tmp) {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw std::runtime_error(fmt::format("open {}: {}", tmp, std::strerror(errno)));
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    if (std::fclose(f) != 0 || !ok) throw std::runtime_error(fmt::format("write {} failed", tmp));
  });
}

}  // namespace gpt2
