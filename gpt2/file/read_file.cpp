#include "gpt2/file/read_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gpt2 {

InputFile::InputFile(const std::string& path, std::string_view what, uint64_t max_bytes)
    : path_(path), what_(what) {
  // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a
  // writer, and is then refused below as not a regular file.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd_ < 0) throw error(errno_text(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw error(errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw error(fmt::format("it is {}, not a regular file", file_kind(st.st_mode)));
  }
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ > max_bytes) {
    ::close(fd_);
    throw error(fmt::format("it holds {} bytes, more than the {} allowed", size_, max_bytes));
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
}

InputFile::~InputFile() { ::close(fd_); }

FileError InputFile::error(const std::string& reason) const {
  return FileError(fmt::format("cannot read {}{}'{}': {}", what_, what_.empty() ? "" : " ", path_,
                               reason));
}

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
  const InputFile file(path, what, max_bytes);
  // Read to the end, not to the size at open: the file may have changed
  // since; never past max_bytes.
  std::string bytes(static_cast<size_t>(file.size()), '\0');
  size_t done = 0;
  for (;;) {
    if (done == bytes.size()) {
      if (bytes.size() >= max_bytes) break;
      bytes.resize(static_cast<size_t>(std::min<uint64_t>(max_bytes, bytes.size() + 65536)));
    }
    const ssize_t n = ::read(file.fd(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw file.error(errno_text(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  char probe = 0;
  if (done == max_bytes && ::read(file.fd(), &probe, 1) == 1) {
    throw file.error(fmt::format("it grew past the {} bytes allowed while being read", max_bytes));
  }
  bytes.resize(done);
  return bytes;
}

std::string read_stdin(uint64_t max_bytes) {
  std::string bytes;
  size_t done = 0;
  for (;;) {
    if (done == bytes.size()) bytes.resize(bytes.size() + 65536);
    const ssize_t n = ::read(STDIN_FILENO, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      throw FileError(fmt::format("cannot read standard input: {}",
                                  err == EBADF ? "it is closed (EBADF)" : errno_text(err)));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
    if (done > max_bytes) {
      throw FileError(fmt::format("cannot read standard input: it holds more than the {} bytes "
                                  "allowed", max_bytes));
    }
  }
  bytes.resize(done);
  return bytes;
}

void require_regular_file(const std::string& path) { const InputFile file(path); }

}  // namespace gpt2
