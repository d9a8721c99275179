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

/// Throws FileError naming `path` and the reason unless it is a regular
/// file this process can open for reading: a missing file, a FIFO (which
/// would block a reader forever), a device, a folder or a symbolic-link
/// loop is refused before anything tries to read it.
void require_regular_file(const std::string& path);

/// "No space left on device (ENOSPC)": errno `err` as messages word it.
std::string errno_text(int err);

/// "a folder", "a FIFO", "a character device", ... for a file that is not a
/// regular file.
std::string file_kind(mode_t mode);

}  // namespace gpt2
