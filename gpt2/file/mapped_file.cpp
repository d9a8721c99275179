#include "gpt2/file/mapped_file.h"

#include <sys/mman.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "gpt2/file/read_file.h"

namespace gpt2::detail {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// `size` bytes of `fd` mapped private and writable at a 2 MiB boundary: a
// PROT_NONE reservation with room to align, the file mapped over its aligned
// part, the slack either side returned. MAP_FAILED on failure.
void* map_aligned(int fd, size_t size) {
  const size_t reserved = size + kHugePage;
  void* base = ::mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return MAP_FAILED;
  const auto begin = reinterpret_cast<uintptr_t>(base);
  const uintptr_t aligned = (begin + kHugePage - 1) & ~(kHugePage - 1);
  void* data = ::mmap(reinterpret_cast<void*>(aligned), size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (data == MAP_FAILED) {
    const int err = errno;
    ::munmap(base, reserved);
    errno = err;
    return MAP_FAILED;
  }
  const size_t mapped_end = (aligned + size + 4095) & ~uintptr_t{4095};
  if (aligned > begin) ::munmap(base, aligned - begin);
  if (begin + reserved > mapped_end) {
    ::munmap(reinterpret_cast<void*>(mapped_end), begin + reserved - mapped_end);
  }
  // Where the kernel cannot (no THP), the mapping works without it.
  ::madvise(data, size, MADV_HUGEPAGE);
  return data;
}

}  // namespace

MappedFile::MappedFile(const std::string& path, std::string_view what, MapAccess access)
    : MappedFile(InputFile(path, what), access) {}

MappedFile::MappedFile(const InputFile& file, MapAccess access) {
  size_ = static_cast<size_t>(file.size());
  if (size_ > 0) {
    data_ = access == MapAccess::kCopyOnWrite
                ? map_aligned(file.fd(), size_)
                : ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd(), 0);
    if (data_ == MAP_FAILED) {
      data_ = nullptr;
      throw file.error("cannot map it: " + errno_text(errno));
    }
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

bool MappedFile::populate(size_t offset, size_t length) const {
#ifdef MADV_POPULATE_READ
  if (offset >= size_) return true;
  const size_t begin = offset & ~size_t{4095};  // madvise takes whole pages
  const size_t end = offset + std::min(length, size_ - offset);
  return ::madvise(static_cast<char*>(data_) + begin, end - begin, MADV_POPULATE_READ) == 0;
#else
  (void)offset;
  (void)length;
  return false;
#endif
}

size_t MappedFile::huge_page_bytes() const {
  if (size_ == 0) return 0;
  const std::unique_ptr<FILE, int (*)(FILE*)> smaps(std::fopen("/proc/self/smaps", "re"),
                                                    &std::fclose);
  if (!smaps) return 0;
  // The mapping's block starts with the line "<start>-<end> ...", in hex.
  const auto start = static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(data_));
  char line[512];
  bool ours = false;
  while (std::fgets(line, sizeof line, smaps.get())) {
    const bool header = std::isxdigit(static_cast<unsigned char>(line[0])) &&
                        !std::isupper(static_cast<unsigned char>(line[0]));  // fields are "Name:"
    if (header) {
      if (ours) break;  // the next mapping's header
      char* end = nullptr;
      ours = std::strtoull(line, &end, 16) == start && *end == '-';
    } else if (ours && std::strncmp(line, "FilePmdMapped:", 14) == 0) {
      return static_cast<size_t>(std::strtoull(line + 14, nullptr, 10)) * 1024;
    }
  }
  return 0;
}

}  // namespace gpt2::detail
