#pragma once
/// Reading input files, one way for every reader: regular files only (a
/// FIFO would block, a device never ends, a folder is no text), a size limit
/// checked before anything is allocated, and errors that name the file, what
/// it was read as, and errno's reason.

#include <sys/types.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "gpt2/error.h"

namespace gpt2 {

/// No limit on a file's size beyond the memory to hold it.
inline constexpr uint64_t kNoSizeLimit = std::numeric_limits<uint64_t>::max();

/// The whole of the regular file `path`. Throws FileError `cannot read
/// [<what> ]'<path>': <reason>` when it is missing, unreadable, not a regular
/// file (checked on the opened descriptor, so a path swapped meanwhile is
/// caught, and opened without blocking, so a FIFO is refused, not waited
/// on), or larger than `max_bytes` (the message gives both sizes).
std::string read_file(const std::string& path, std::string_view what = "",
                      uint64_t max_bytes = kNoSizeLimit);

/// All of standard input, read in 64 KiB chunks up to `max_bytes`. Throws
/// FileError `cannot read standard input: <reason>` when it is closed
/// (EBADF), a folder (EISDIR), fails to read, or holds more than max_bytes:
/// standard input is the one stream the readers take, and its errors are
/// errors, never an empty input.
std::string read_stdin(uint64_t max_bytes = kNoSizeLimit);

/// Throws FileError naming `path` and the reason unless it is a regular
/// file this process can open for reading: a missing file, a FIFO (which
/// would block a reader forever), a device, a folder or a symbolic-link
/// loop is refused before anything tries to read it.
void require_regular_file(const std::string& path);

/// A file opened for reading by the same rules as read_file (a regular file,
/// opened without blocking, at most `max_bytes`), for readers that map it
/// or read it in pieces. Errors are FileError `cannot read [<what> ]'<path>':
/// <reason>`; fail() words a reader's own problems the same way.
class InputFile {
 public:
  InputFile(const std::string& path, std::string_view what = "",
            uint64_t max_bytes = kNoSizeLimit);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  /// The open descriptor (blocking reads again), owned by this object.
  int fd() const { return fd_; }
  /// The file's size when it was opened.
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  /// The FileError for `reason`, worded as every error of this file.
  FileError error(const std::string& reason) const;

 private:
  std::string path_, what_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// "No space left on device (ENOSPC)": errno `err` as messages word it.
std::string errno_text(int err);

/// "a folder", "a FIFO", "a character device", ... for a file that is not a
/// regular file.
std::string file_kind(mode_t mode);

}  // namespace gpt2
