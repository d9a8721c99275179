#include "gpt2/io/detail/mapped_tensor.h"

#include <ATen/ops/from_blob.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "gpt2/error.h"
#include "gpt2/file/read_file.h"
#include "gpt2/io/detail/on_threads.h"
#include "gpt2/ops/memory.h"

namespace gpt2::detail {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
// kAuto's sample: this many 2 MiB pieces, spread evenly over the file.
constexpr size_t kSamplePieces = 8;

ModelFileBytes viewed(std::shared_ptr<const MappedFile> file) {
  const std::string_view bytes = file->bytes();
  return {bytes, std::move(file), /*view=*/true, /*fd=*/-1, /*block=*/nullptr};
}

// The file mapped read-only, for parsing, and kept open, with a block to
// read its tensors into.
ModelFileBytes opened(const std::string& path) {
  struct Opened {
    explicit Opened(const std::string& path) : file(path), map(file) {}
    InputFile file;
    MappedFile map;
  };
  auto opened = std::make_shared<const Opened>(path);
  const std::string_view bytes = opened->map.bytes();
  std::shared_ptr<char> block;
  if (!bytes.empty()) {
    const LargeBlock taken = take_large(bytes.size());
    block.reset(static_cast<char*>(taken.data), [taken](char*) { give_large(taken); });
  }
  return {bytes, opened, /*view=*/false, opened->file.fd(), std::move(block)};
}

// `sizes` x `dtype` over `at`, inside `all`, holding `keep`.
at::Tensor tensor_over(std::shared_ptr<const void> keep, std::string_view all, const char* at,
                       at::IntArrayRef sizes, at::ScalarType dtype) {
  const size_t element = c10::elementSize(dtype);
  size_t bytes = element;
  for (const int64_t d : sizes) bytes *= static_cast<size_t>(d);
  if (at < all.data() || at > all.data() + all.size() ||
      bytes > static_cast<size_t>(all.data() + all.size() - at)) {
    throw Error(fmt::format("gpt2: {} bytes at offset {} lie outside the {}-byte model file",
                            bytes, at - all.data(), all.size()));
  }
  if (reinterpret_cast<uintptr_t>(at) % element != 0) return {};
  // The deleter holds `keep`: the bytes go with the last storage over them.
  return at::from_blob(const_cast<char*>(at), sizes, [keep](void*) {},
                       at::TensorOptions(dtype));
}

}  // namespace

bool huge_pages_sampled(const MappedFile& file) {
  const size_t pieces = file.bytes().size() / kHugePage;
  if (pieces == 0) return false;
  const size_t taken = std::min(pieces, kSamplePieces);
  for (size_t i = 0; i < taken; ++i) {
    if (!file.populate(i * pieces / taken * kHugePage, kHugePage)) return false;
  }
  return file.huge_page_bytes() >= taken * kHugePage / 2;
}

ModelFileBytes model_file_bytes(const std::string& path, Mmap mmap) {
  if (mmap == Mmap::kOff) return opened(path);
  std::shared_ptr<const MappedFile> file;
  try {
    file = std::make_shared<const MappedFile>(path, "", MapAccess::kCopyOnWrite);
  } catch (const FileError&) {
    // A private writable mapping is charged as memory: under strict
    // overcommit it can fail where a read-only one does not. kAuto reads.
    if (mmap == Mmap::kOn) throw;
    return opened(path);
  }
  if (mmap == Mmap::kOn) return viewed(std::move(file));
  if (huge_pages_sampled(*file)) {
    file->populate();  // all of it now: the kernel maps 2 MiB folios whole as it goes
    return viewed(std::move(file));
  }
  file.reset();
  return opened(path);
}

at::Tensor tensor_in_file(const ModelFileBytes& file, const char* at, at::IntArrayRef sizes,
                          at::ScalarType dtype) {
  return tensor_over(file.holder, file.bytes, at, sizes, dtype);
}

at::Tensor tensor_in_block(const ModelFileBytes& file, char* to, at::IntArrayRef sizes,
                           at::ScalarType dtype) {
  int64_t bytes = static_cast<int64_t>(c10::elementSize(dtype));
  for (const int64_t d : sizes) bytes *= d;
  if (bytes < kLargeBytes) return {};
  return tensor_over(file.block, {file.block.get(), file.bytes.size()}, to, sizes, dtype);
}

at::Tensor read_tensor(const ModelFileBytes& file, const char* at, at::IntArrayRef sizes,
                       at::ScalarType dtype, const std::string& path) {
  if (!file.block) return {};
  char* const to = in_block(file, at);
  at::Tensor t = tensor_in_block(file, to, sizes, dtype);
  if (t.defined()) read_bytes(file, at, to, t.nbytes(), path);
  return t;
}

at::Tensor tensor_from_file(const ModelFileBytes& file, const char* at, at::IntArrayRef sizes,
                            at::ScalarType dtype, const std::string& path) {
  return file.view ? tensor_in_file(file, at, sizes, dtype)
                   : read_tensor(file, at, sizes, dtype, path);
}

void read_bytes(const ModelFileBytes& file, const char* at, void* to, size_t n,
                const std::string& path) {
  if (file.fd < 0) {
    copy_on_threads(to, at, n);
    return;
  }
  const int status = read_on_threads(file.fd, static_cast<uint64_t>(at - file.bytes.data()), to, n);
  if (status > 0) throw FileError(fmt::format("cannot read '{}': {}", path, errno_text(status)));
  if (status < 0) {
    throw FileError(fmt::format("cannot read '{}': it ended before the {} bytes its header "
                                "describes (it changed while read)", path, file.bytes.size()));
  }
}

}  // namespace gpt2::detail
