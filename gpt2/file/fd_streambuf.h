#pragma once
/// An output streambuf over a file descriptor that never reports failure to
/// its stream: the first write error (ENOSPC, EFBIG, EIO, ...) is recorded
/// and later output dropped. Writers whose cleanup throws on a short write
/// (LibTorch's zip writer throws from its destructor, which ends the
/// process during unwinding) then finish normally, and the caller reports
/// error() after. Internal to gpt2::io.

#include <cstddef>
#include <streambuf>
#include <vector>

namespace gpt2::detail {

class FdStreambuf : public std::streambuf {
 public:
  /// Every write but the last is this many bytes, at a multiple of it in the
  /// file: the page cache then holds a large file in 2 MiB folios where the
  /// filesystem has them (ext4 under Linux 6.18 here), which a mapping reads
  /// through 2 MiB pages (gpt2::Mmap::kAuto). Smaller writes leave it in
  /// smaller folios.
  static constexpr std::size_t kBufferBytes = std::size_t{2} << 20;
  /// Writes to `fd` (not owned, at offset 0) through a kBufferBytes buffer.
  explicit FdStreambuf(int fd);
  /// Writes what is buffered; returns the first errno seen, or 0.
  int finish();
  /// The first errno seen so far, or 0.
  int error() const { return error_; }
  /// Bytes that reached the file.
  std::size_t written() const { return written_; }

 protected:
  int_type overflow(int_type ch) override;
  int sync() override;

 private:
  void drain();
  int fd_;
  int error_ = 0;
  std::size_t written_ = 0;
  std::vector<char> buffer_;
};

/// Test seam: when non-zero, writes past this many bytes fail with ENOSPC,
/// as on a full disk. Not thread-safe.
extern std::size_t fd_write_limit;

}  // namespace gpt2::detail
