#pragma once
/// How file problems are worded in messages. Internal to gpt2::io.

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstring>
#include <string>

namespace gpt2::detail {

/// "No space left on device (ENOSPC)".
inline std::string errno_text(int err) {
  const char* name = ::strerrorname_np(err);
  return fmt::format("{} ({})", std::strerror(err), name ? name : "?");
}

/// "a folder", "a FIFO", ... for a file that is not a regular file.
inline std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace gpt2::detail
