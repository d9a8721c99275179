#include "gpt2/file/mapped_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gpt2/error.h"

namespace gpt2::detail {

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw FileError(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    ::close(fd);
    throw FileError(fmt::format("cannot read '{}': {}", path,
                                S_ISREG(st.st_mode) ? std::strerror(err) : "not a regular file"));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data_ == MAP_FAILED) {
      const int err = errno;
      data_ = nullptr;
      ::close(fd);
      throw FileError(fmt::format("cannot map '{}': {}", path, std::strerror(err)));
    }
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace gpt2::detail
