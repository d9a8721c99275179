#include "gpt2/train/token_loader.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

#include "gpt2/error.h"
#include "gpt2/file/read_file.h"

namespace gpt2 {

TokenFile::TokenFile(const std::string& path)
    : path_(path), file_(std::make_unique<InputFile>(path, "token file")) {
  const InputFile& file = *file_;
  const auto bytes = static_cast<size_t>(file.size());
  if (bytes == 0 || bytes % 2 != 0) {
    throw FileError(fmt::format("token file '{}' has {} bytes; expected a positive, even count "
                                "(uint16 ids)", path, bytes));
  }
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, file.fd(), 0);
  if (map == MAP_FAILED) throw file.error("cannot map it: " + errno_text(errno));
  data_ = static_cast<const uint16_t*>(map);
  size_ = static_cast<int64_t>(bytes / 2);
}

TokenFile::~TokenFile() {
  if (data_) ::munmap(const_cast<uint16_t*>(data_), static_cast<size_t>(size_) * 2);
}

void TokenFile::read(int64_t first, int64_t count, uint16_t* out) const {
  TORCH_CHECK(first >= 0 && count >= 0 && first + count <= size_, "token range [", first, ", ",
              first + count, ") outside the file's ", size_, " tokens");
  auto* to = reinterpret_cast<char*>(out);
  const auto want = static_cast<size_t>(count) * 2;
  size_t done = 0;
  while (done < want) {
    const ssize_t n = ::pread(file_->fd(), to + done, want - done,
                              static_cast<off_t>(first * 2 + static_cast<int64_t>(done)));
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw file_->error(errno_text(errno));
    struct stat st {};
    const int64_t now = ::fstat(file_->fd(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
    throw FileError(fmt::format(
        "token file '{}' was cut short while it was read: it held {} bytes when opened, {} now "
        "(tokens {} to {} are gone); write a dataset another run reads into another folder",
        path_, size_ * 2, now, first, first + count));
  }
}

TokenLoader::TokenLoader(std::shared_ptr<const TokenFile> file, int64_t batch_size,
                         int64_t block_size, uint64_t seed)
    : file_(std::move(file)),
      batch_size_(batch_size),
      block_size_(block_size),
      generator_(at::make_generator<at::CPUGeneratorImpl>(seed)) {
  if (batch_size <= 0 || block_size <= 0) {
    throw InputError(fmt::format("batch size {} and block size {} must be positive", batch_size,
                                 block_size));
  }
  if (file_->size() < block_size + 1) {
    throw InputError(fmt::format("token file '{}' holds {} tokens, too few for one block of {} "
                                 "plus its next-token target",
                                 file_->path(), file_->size(), block_size));
  }
  x_ = torch::empty({batch_size, block_size}, torch::kInt64);
  y_ = torch::empty({batch_size, block_size}, torch::kInt64);
}

torch::Tensor TokenLoader::draw_offsets() {
  return torch::randint(file_->size() - block_size_, {batch_size_}, generator_, torch::kInt64);
}

Batch TokenLoader::next() {
  const torch::Tensor offsets = draw_offsets();
  const int64_t* ix = offsets.data_ptr<int64_t>();
  int64_t* x = x_.data_ptr<int64_t>();
  int64_t* y = y_.data_ptr<int64_t>();
  row_.resize(static_cast<size_t>(block_size_) + 1);
  for (int64_t b = 0; b < batch_size_; ++b) {
    file_->read(ix[b], block_size_ + 1, row_.data());
    const uint16_t* row = row_.data();
    for (int64_t t = 0; t < block_size_; ++t) {
      x[b * block_size_ + t] = row[t];
      y[b * block_size_ + t] = row[t + 1];
    }
  }
  return {x_, y_};
}

void TokenLoader::skip(int64_t batches) {
  for (int64_t i = 0; i < batches; ++i) draw_offsets();
}

void TokenLoader::reseed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(generator_.mutex());
  generator_.set_current_seed(seed);
}

torch::Tensor generator_state(at::Generator& generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_generator_state(at::Generator& generator, const torch::Tensor& state, const char* what) {
  const torch::Tensor reference = generator_state(generator);
  if (!state.defined() || state.scalar_type() != torch::kUInt8 || state.sizes() != reference.sizes()) {
    throw InputError(fmt::format(
        "{}'s generator state is a uint8 tensor of {} bytes; got {}", what, reference.numel(),
        state.defined() ? fmt::format("{} of {} elements", state.toString(), state.numel()) : "none"));
  }
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

torch::Tensor TokenLoader::rng_state() const { return generator_state(generator_); }

void TokenLoader::set_rng_state(const torch::Tensor& state) {
  set_generator_state(generator_, state, "a token loader");
}

}  // namespace gpt2
