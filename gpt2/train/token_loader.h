#pragma once
/// Batches of token ids from nanoGPT's uint16 token files: the file is
/// memory-mapped, and each batch's row offsets are drawn uniformly from the
/// loader's own seeded generator, whose state a checkpoint stores.

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpt2/file/read_file.h"

namespace gpt2 {

/// A token file (native-endian uint16 ids, as numpy's tofile writes them on
/// x86), open and mapped read-only.
class TokenFile {
 public:
  /// Opens and maps `path`. Throws FileError naming the path for a file that
  /// cannot be opened or mapped, is empty, or has an odd byte count.
  explicit TokenFile(const std::string& path);
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  /// Number of tokens in the file.
  int64_t size() const { return size_; }
  /// The tokens (size() of them), valid while this object lives. A page
  /// past the end of a file cut short meanwhile faults (SIGBUS): readers
  /// that run while other programs may write the file use read().
  const uint16_t* data() const { return data_; }
  /// Copies tokens [first, first + count) into `out` through the open
  /// descriptor (pread), never the map, so a file cut short under the run
  /// (a `gpt2 prepare` into the same folder, a `truncate`) is a FileError
  /// naming it and both sizes instead of a crash. A file replaced by a
  /// rename keeps being read as it was opened.
  void read(int64_t first, int64_t count, uint16_t* out) const;
  /// The path it was opened from.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<InputFile> file_;
  const uint16_t* data_ = nullptr;
  int64_t size_ = 0;
};

/// A generator's state (a uint8 tensor), read under its lock.
torch::Tensor generator_state(at::Generator& generator);
/// Restores a state from generator_state(); throws InputError naming
/// `what` ("a token loader") for a tensor that is not such a state.
void set_generator_state(at::Generator& generator, const torch::Tensor& state, const char* what);

/// Inputs and next-token targets.
struct Batch {
  /// (B, T) int64 token ids.
  torch::Tensor x;
  /// (B, T) int64: x shifted by one position in the file.
  torch::Tensor y;
};

/// Where a trainer's batches come from: a stream of (B, T) batches whose
/// position is a generator state plus, for sources that keep more
/// (ShardLoader: shard, offset, epoch), a position in JSON text; both go
/// into a checkpoint so that a resumed run draws the batches that followed.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  /// The next batch. Its tensors may be the source's buffers, refilled in
  /// place by the next call: use them before calling again.
  virtual Batch next() = 0;
  /// Moves on as `batches` calls of next() would, without reading them.
  /// Data-parallel ranks share one stream and skip each other's batches.
  virtual void skip(int64_t batches) = 0;
  /// Starts again as if fresh from `seed` (for evaluation on fixed batches).
  virtual void reseed(uint64_t seed) = 0;
  /// The generator's state (a uint8 tensor of a CPU generator's size).
  virtual torch::Tensor rng_state() const = 0;
  /// Restores a state from rng_state(). Throws InputError for a tensor
  /// that is not such a state.
  virtual void set_rng_state(const torch::Tensor& state) = 0;
  /// The rest of the position, as JSON text; empty when the generator is all.
  virtual std::string position() const { return {}; }
  /// Restores position(). Throws InputError when it does not fit this source.
  virtual void set_position(const std::string& position) { (void)position; }
};

/// Draws (B, T) batches from a TokenFile as nanoGPT's get_batch: B offsets
/// uniform in [0, size - T), x = file[i, i + T), y = file[i + 1, i + T + 1).
class TokenLoader : public BatchSource {
 public:
  /// Throws InputError when the file holds fewer than block_size + 1 tokens
  /// (no window fits) or a size is not positive, naming the file and sizes.
  TokenLoader(std::shared_ptr<const TokenFile> file, int64_t batch_size, int64_t block_size,
              uint64_t seed);

  /// The next batch, in this loader's buffers.
  Batch next() override;
  /// Draws `batches` batches' offsets and drops them: the generator ends
  /// where `batches` calls of next() would leave it.
  void skip(int64_t batches) override;
  /// Draws as if fresh from `seed` again.
  void reseed(uint64_t seed) override;

  /// The generator's state (a uint8 tensor), to store in a checkpoint.
  torch::Tensor rng_state() const override;
  /// Restores a state from rng_state(); the next batches are those that
  /// followed it.
  void set_rng_state(const torch::Tensor& state) override;

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
  std::vector<uint16_t> row_;  // one row and its target, as read
};

}  // namespace gpt2
