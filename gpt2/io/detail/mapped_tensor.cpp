#include "gpt2/io/detail/mapped_tensor.h"

#include <ATen/ops/from_blob.h>
#include <fmt/format.h>

#include <cstdint>

#include "gpt2/error.h"

namespace gpt2::detail {

ModelFileMap map_model_file(const std::string& path, Mmap mmap) {
  if (mmap == Mmap::kOff) return {std::make_shared<const MappedFile>(path), false};
  std::shared_ptr<const MappedFile> file;
  try {
    file = std::make_shared<const MappedFile>(path, "", MapAccess::kCopyOnWrite);
  } catch (const FileError&) {
    // A private writable mapping is charged as memory: under strict
    // overcommit it can fail where a read-only one does not. kAuto copies.
    if (mmap == Mmap::kOn) throw;
    return {std::make_shared<const MappedFile>(path), false};
  }
  if (mmap == Mmap::kOn) return {std::move(file), true};
  // Mapped in full first: the kernel maps 2 MiB folios whole as it goes.
  const size_t size = file->bytes().size();
  const bool view = file->populate() && file->huge_page_bytes() >= size / 2;
  return {std::move(file), view};
}

at::Tensor tensor_in_file(const std::shared_ptr<const MappedFile>& file, const char* at,
                          at::IntArrayRef sizes, at::ScalarType dtype) {
  const size_t element = c10::elementSize(dtype);
  size_t bytes = element;
  for (const int64_t d : sizes) bytes *= static_cast<size_t>(d);
  const std::string_view all = file->bytes();
  if (at < all.data() || at > all.data() + all.size() ||
      bytes > static_cast<size_t>(all.data() + all.size() - at)) {
    throw Error(fmt::format("gpt2: {} bytes at offset {} lie outside the {}-byte mapped file",
                            bytes, at - all.data(), all.size()));
  }
  if (reinterpret_cast<uintptr_t>(at) % element != 0) return {};
  // The deleter holds the mapping: it is unmapped with the last storage over it.
  return at::from_blob(const_cast<char*>(at), sizes, [file](void*) {}, at::TensorOptions(dtype));
}

}  // namespace gpt2::detail
