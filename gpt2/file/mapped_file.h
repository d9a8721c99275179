#pragma once
// A whole file mapped read-only into memory, for readers that check every
// size against the file before touching the bytes it points at.

#include <cstddef>
#include <string>
#include <string_view>

namespace gpt2::detail {

/// The bytes of a file, mapped read-only for the object's lifetime.
class MappedFile {
 public:
  /// Maps `path`, opened by read_file.h's rules (a regular file, never a
  /// FIFO); throws FileError naming it (as `what`, e.g. "token file") if it
  /// cannot be opened or mapped.
  explicit MappedFile(const std::string& path, std::string_view what = "");
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// The file's bytes (empty for an empty file).
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace gpt2::detail
