// The whole-file writers over StagedFile (atomic_file.h): a file written
// through a stream or by a callback on its temporary, then renamed over the
// target; and the check that an output is not one of the command's inputs.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ostream>
#include <stdexcept>

#include "gpt2/error.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/file/fd_streambuf.h"
#include "gpt2/file/read_file.h"

namespace gpt2 {

namespace {

// Runs `write` on a fresh temporary file beside `path` and renames it over
// the target; see write_atomically.
void replace(const std::string& path, const std::function<void(const std::string&)>& write) {
  StagedFile staged(path);
  try {
    write(staged.tmp_path());
  } catch (const std::exception& e) {
    throw staged.error(e.what());
  }
  staged.commit();
}

}  // namespace

void write_atomically(const std::string& path,
                      const std::function<void(const std::string& tmp_path)>& write) {
  replace(path, write);
}

void write_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  replace(path, [&write](const std::string& tmp) {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(fmt::format("open {}: {}", tmp, errno_text(errno)));
    detail::FdStreambuf buffer(fd);
    std::ostream stream(&buffer);
    try {
      write(stream);
    } catch (...) {
      ::close(fd);
      throw;
    }
    const int err = buffer.finish();
    const int closed = ::close(fd) == 0 ? 0 : errno;
    if (err != 0 || closed != 0) {
      throw std::runtime_error(fmt::format("after {} bytes: {}", buffer.written(),
                                           errno_text(err != 0 ? err : closed)));
    }
  });
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

void refuse_writing_over_inputs(const std::string& out,
                                const std::vector<std::pair<std::string, std::string>>& inputs) {
  for (const auto& [path, what] : inputs) {
    if (!path.empty() && same_file(out, path)) {
      throw FileError(fmt::format("cannot write '{}': it is the same file as the input '{}' ({}), "
                                  "which writing would replace; write elsewhere", out, path, what));
    }
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  write_atomically(path, [bytes](std::ostream& out) {
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  });
}

}  // namespace gpt2
