#pragma once
/// Batches of token ids from nanoGPT's uint16 token files: the file is
/// memory-mapped, and each batch's row offsets are drawn uniformly from the
/// loader's own seeded generator, whose state a checkpoint stores.

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>

namespace gpt2 {

/// A read-only memory map of a token file (native-endian uint16 ids, as
/// numpy's tofile writes them on x86).
class TokenFile {
 public:
  /// Maps `path`. Throws FileError naming the path for a file that cannot
  /// be opened or mapped, is empty, or has an odd byte count.
  explicit TokenFile(const std::string& path);
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  /// Number of tokens in the file.
  int64_t size() const { return size_; }
  /// The tokens (size() of them), valid while this object lives.
  const uint16_t* data() const { return data_; }
  /// The path it was opened from.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint16_t* data_ = nullptr;
  int64_t size_ = 0;
};

/// Inputs and next-token targets.
struct Batch {
  /// (B, T) int64 token ids.
  torch::Tensor x;
  /// (B, T) int64: x shifted by one position in the file.
  torch::Tensor y;
};

/// Draws (B, T) batches from a TokenFile as nanoGPT's get_batch: B offsets
/// uniform in [0, size - T), x = file[i, i + T), y = file[i + 1, i + T + 1).
class TokenLoader {
 public:
  /// Throws InputError when the file holds fewer than block_size + 1 tokens
  /// (no window fits) or a size is not positive, naming the file and sizes.
  TokenLoader(std::shared_ptr<const TokenFile> file, int64_t batch_size, int64_t block_size,
              uint64_t seed);

  /// The next batch. Its tensors are this loader's buffers, refilled in
  /// place by the next call: use them before calling again.
  Batch next();
  /// Draws `batches` batches' offsets and drops them: the generator ends
  /// where `batches` calls of next() would leave it. Data-parallel ranks
  /// share one seeded stream and skip each other's micro-batches.
  void skip(int64_t batches);
  /// Draws as if fresh from `seed` again (for evaluation on fixed batches).
  void reseed(uint64_t seed);

  /// The generator's state (a uint8 tensor), to store in a checkpoint.
  torch::Tensor rng_state() const;
  /// Restores a state from rng_state(); the next batches are those that
  /// followed it. Throws InputError for a tensor that is not such a state.
  void set_rng_state(const torch::Tensor& state);

  /// Tokens per batch, B * T.
  int64_t tokens_per_batch() const { return batch_size_ * block_size_; }
  /// The file batches come from.
  const TokenFile& file() const { return *file_; }

 private:
  torch::Tensor draw_offsets();  // (B,) int64 row starts

  std::shared_ptr<const TokenFile> file_;
  int64_t batch_size_;
  int64_t block_size_;
  mutable at::Generator generator_;  // mutable: reading its state locks it
  torch::Tensor x_, y_;
};

}  // namespace gpt2
