#include "gpt2/file/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "gpt2/error.h"
#include "gpt2/file/atomic_write_fault.h"
#include "gpt2/file/read_file.h"
#include "gpt2/file/remove_on_signal.h"

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

std::string reason(int err) { return errno_text(err); }

// The file to replace: `path`, or what a symbolic link there points to.
// Throws FileError for anything but a regular file or nothing.
std::filesystem::path resolve_target(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return path;
    throw FileError(fmt::format("cannot write '{}': {}", path, reason(errno)));
  }
  std::filesystem::path target(path);
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    target = std::filesystem::weakly_canonical(path, ec);
    if (ec) {
      throw FileError(fmt::format("cannot write '{}': cannot resolve the symbolic link: {}", path,
                                  ec.message()));
    }
    if (::stat(target.c_str(), &st) != 0) return target;  // a link to a file yet to exist
  }
  if (!S_ISREG(st.st_mode)) {
    throw FileError(fmt::format("cannot write '{}': it is {}; refusing to replace it", path,
                                file_kind(st.st_mode)));
  }
  return target;
}

// Removes the `.<name>.tmp-<pid>-<n>` files in `folder` of processes that
// no longer exist: those of `target` alone, or of every name when `target`
// is empty.
void remove_dead_temporaries(const std::filesystem::path& target,
                             const std::filesystem::path& folder) {
  const std::string prefix =
      target.empty() ? std::string(".") : fmt::format(".{}.tmp-", target.filename().string());
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    // The pid follows the last ".tmp-" (a target's name may hold one).
    const size_t at = target.empty() ? name.rfind(".tmp-") : prefix.size() - 5;
    if (at == std::string::npos || at == 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + at + 5, &end, 10);
    if (pid <= 0 || *end != '-') continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

}  // namespace

void remove_stale_temporaries(const std::string& folder) {
  remove_dead_temporaries({}, folder);
}

StagedFile::StagedFile(const std::string& path) : path_(path) {
  target_ = resolve_target(path).string();
  const std::filesystem::path target(target_);
  folder_ = target.parent_path().empty() ? std::string(".") : target.parent_path().string();
  remove_dead_temporaries(target, folder_);
  // Signals wait while the file is created and its removal armed, so that
  // none lands between the two.
  sigset_t interrupting, previous_mask;
  sigemptyset(&interrupting);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&interrupting, sig);
  ::pthread_sigmask(SIG_BLOCK, &interrupting, &previous_mask);
  try {
    tmp_ = create_temporary(target, folder_);
    remove_on_signal_ = std::make_unique<RemoveOnSignal>(tmp_);
  } catch (...) {
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
    ::pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
    throw;
  }
  ::pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
}

StagedFile::~StagedFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

FileError StagedFile::error(const std::string& reason) const {
  return FileError(fmt::format("cannot write '{}': {}", path_, reason));
}

void StagedFile::open_fd() {
  if (fd_ >= 0) return;
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) throw error(fmt::format("open {}: {}", tmp_, reason(errno)));
  synced_ = false;
}

void StagedFile::append(const void* data, size_t bytes) {
  open_fd();
  write_at(size_, data, bytes);
  size_ += bytes;
}

void StagedFile::write_at(uint64_t offset, const void* data, size_t bytes) {
  open_fd();
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd_, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw error(fmt::format("after {} bytes: {}", offset, reason(n < 0 ? errno : ENOSPC)));
    p += n;
    offset += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
}

void StagedFile::close() {
  if (committed_) throw error("closed after its commit");
  if (synced_ && fd_ < 0) return;
  try {
    if (fd_ >= 0) {
      const int closed = ::close(fd_);
      fd_ = -1;
      if (closed != 0) throw std::runtime_error(fmt::format("close {}: {}", tmp_, reason(errno)));
    }
    step_done("written");
    fsync_path(tmp_, O_RDONLY);
    step_done("synced");
  } catch (const std::exception& e) {
    throw error(e.what());
  }
  synced_ = true;
}

void StagedFile::commit() {
  if (committed_) throw error("committed twice");
  close();
  try {
    std::filesystem::rename(tmp_, target_);
  } catch (const std::exception& e) {
    throw error(e.what());
  }
  committed_ = true;
  // The rename is durable once the folder's entry is; a failure here leaves
  // the new file in place, so it is not reported as a failed write.
  try {
    fsync_path(folder_, O_RDONLY | O_DIRECTORY);
  } catch (const std::exception&) {
  }
}

void remove_marker(const std::string& marker) {
  struct stat st {};
  if (::lstat(marker.c_str(), &st) != 0) return;  // none: nothing to withdraw
  if (::unlink(marker.c_str()) != 0) {
    throw FileError(fmt::format("cannot write '{}': cannot remove the old one first: {}", marker,
                                reason(errno)));
  }
  const std::string folder = std::filesystem::path(marker).parent_path().string();
  try {
    fsync_path(folder.empty() ? "." : folder, O_RDONLY | O_DIRECTORY);
  } catch (const std::exception&) {
  }
}

void write_files_atomically(const std::vector<std::pair<std::string, std::string_view>>& files) {
  if (files.empty()) return;
  std::vector<std::unique_ptr<StagedFile>> staged;
  for (const auto& [path, bytes] : files) {
    staged.push_back(std::make_unique<StagedFile>(path));
    staged.back()->append(bytes.data(), bytes.size());
  }
  remove_marker(files.back().first);
  for (auto& file : staged) file->commit();
}

}  // namespace gpt2
