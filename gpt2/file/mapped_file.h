#pragma once
// A whole file mapped into memory, for readers that check every size
// against the file before touching the bytes it points at.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpt2 {
class InputFile;
}

namespace gpt2::detail {

/// How a MappedFile's pages may be used.
enum class MapAccess {
  /// Read only: a stray write faults.
  kReadOnly,
  /// Private and writable: a write copies that page for this process alone
  /// (the file never changes), so tensors over the pages behave as the
  /// process's own memory. The mapping starts on a 2 MiB boundary and asks
  /// for huge pages (MADV_HUGEPAGE), so that where the kernel holds the file
  /// in 2 MiB folios it maps them whole (huge_page_bytes()).
  kCopyOnWrite,
};

/// The bytes of a file, mapped for the object's lifetime.
class MappedFile {
 public:
  /// Maps `path`, opened by read_file.h's rules (a regular file, never a
  /// FIFO); throws FileError naming it (as `what`, e.g. "token file") if it
  /// cannot be opened or mapped.
  explicit MappedFile(const std::string& path, std::string_view what = "",
                      MapAccess access = MapAccess::kReadOnly);
  /// Maps the file `file` has open (its size when opened).
  explicit MappedFile(const InputFile& file, MapAccess access = MapAccess::kReadOnly);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// The file's bytes (empty for an empty file).
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

  /// Maps every page now (MADV_POPULATE_READ), reading what the page cache
  /// lacks; false where the kernel cannot (before Linux 5.14). With `offset`
  /// and `length`, the pages of those bytes (clamped to the file) only.
  bool populate(size_t offset = 0, size_t length = SIZE_MAX) const;
  /// How many of the mapping's bytes the kernel maps in 2 MiB pages now
  /// (FilePmdMapped in /proc/self/smaps; 0 where it cannot be read).
  size_t huge_page_bytes() const;

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace gpt2::detail
