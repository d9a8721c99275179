#include "gpt2/file/output_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "gpt2/error.h"
#include "gpt2/file/read_file.h"

namespace gpt2 {
namespace fs = std::filesystem;

namespace {

FileError refuse(const std::string& dir, const std::string& what, const std::string& reason) {
  return FileError(fmt::format("cannot use '{}' as the {}: {}", dir, what, reason));
}

// The first of `dir` and its parents that exists, and whether it is a folder.
std::string first_existing(const fs::path& dir, bool& is_folder) {
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) {
      is_folder = S_ISDIR(st.st_mode);
      return p.string();
    }
    if (p == p.parent_path()) break;
  }
  is_folder = true;
  return ".";
}

}  // namespace

bool make_output_dir(const std::string& dir, const std::string& what) {
  if (dir.empty()) throw refuse(dir, what, "the path is empty");
  struct stat st {};
  bool made = false;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      throw refuse(dir, what, fmt::format("'{}' is {}, not a folder", dir,
                                         S_ISREG(st.st_mode) ? "a regular file" : file_kind(st.st_mode)));
    }
  } else if (errno == ELOOP) {
    throw refuse(dir, what, "its symbolic links loop");
  } else {
    bool is_folder = true;
    const std::string existing = first_existing(fs::path(dir).lexically_normal(), is_folder);
    if (!is_folder) {
      throw refuse(dir, what, fmt::format("'{}' is a file, not a folder", existing));
    }
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw refuse(dir, what, errno_text(ec.value()));
    made = true;
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw refuse(dir, what, fmt::format("no file can be made in it: {}", errno_text(errno)));
  }
  return made;
}

void refuse_input_inside(const std::string& input, const std::string& dir, const std::string& what) {
  if (dir.empty()) return;  // make_output_dir's to refuse
  std::error_code ec;
  const fs::path in = fs::weakly_canonical(input, ec);
  if (ec) return;  // an input that cannot be resolved is refused by its reader
  const fs::path out = fs::weakly_canonical(dir, ec);
  if (ec) return;
  const auto [out_end, in_at] = std::mismatch(out.begin(), out.end(), in.begin(), in.end());
  if (out_end != out.end()) return;  // `out` is not a prefix of `in`
  throw FileError(fmt::format("'{}' is inside the {} '{}', which this writes: it would be "
                              "overwritten; write the {} elsewhere", input, what, dir, what));
}

FolderLock::FolderLock(const std::string& dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw FileError(fmt::format("cannot lock '{}': {}", dir, errno_text(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) {
      throw FileError(fmt::format(
          "'{}' is in use by another process (a run or a study writing there): two cannot write "
          "into one folder; wait for it to end, or give another --out", dir));
    }
    throw FileError(fmt::format("cannot lock '{}': {}", dir, errno_text(err)));
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // drops the lock
}

}  // namespace gpt2
