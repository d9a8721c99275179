#include "gpt2/file/mapped_file.h"

#include <sys/mman.h>

#include <cerrno>

#include "gpt2/file/read_file.h"

namespace gpt2::detail {

MappedFile::MappedFile(const std::string& path, std::string_view what) {
  const InputFile file(path, what);
  size_ = static_cast<size_t>(file.size());
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd(), 0);
    if (data_ == MAP_FAILED) {
      data_ = nullptr;
      throw file.error("cannot map it: " + errno_text(errno));
    }
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace gpt2::detail
