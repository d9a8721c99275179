#pragma once
/// Batches from a folder of token shards, as llm.c's `dataloader.h`: each
/// batch is the next contiguous window of B * T + 1 tokens of the current
/// shard (x its first B * T, y the same shifted by one), the window
/// advancing by B * T; when the next window no longer fits, the loader moves
/// to the next shard. The shard order is drawn afresh for every epoch from
/// the loader's own seeded generator (or kept in name order, for
/// evaluation). Shard, offset, epoch, order and generator are the position
/// a checkpoint stores.

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpt2/train/data/shard_file.h"
#include "gpt2/train/token_loader.h"

namespace gpt2 {

/// Contiguous (B, T) windows through a list of shards.
class ShardLoader : public BatchSource {
 public:
  /// Shards with fewer than B * T + 1 tokens are passed over; InputError
  /// naming a shard when none is left. With `shuffle`, every epoch
  /// visits the shards in an order drawn from the generator; ids are
  /// checked against `vocab_size` as they are read (FormatError naming the
  /// shard, the offset and the id).
  ShardLoader(std::vector<std::shared_ptr<const ShardFile>> shards, int64_t batch_size,
              int64_t block_size, uint64_t seed, bool shuffle, int64_t vocab_size);

  Batch next() override;
  void skip(int64_t batches) override;
  /// Back to the first window of the first epoch, generator seeded afresh.
  void reseed(uint64_t seed) override;
  torch::Tensor rng_state() const override;
  void set_rng_state(const torch::Tensor& state) override;
  /// {"epoch", "shard" (index into "order"), "offset" (tokens), "order"}.
  std::string position() const override;
  void set_position(const std::string& position) override;

  /// Epochs begun before the current one.
  int64_t epoch() const { return epoch_; }
  /// The shard the next window comes from.
  const ShardFile& current_shard() const { return *shards_[static_cast<size_t>(order_[static_cast<size_t>(index_)])]; }

 private:
  void start_epoch();              // draws the order of the epoch
  const ShardFile& next_window();  // moves on to the shard holding the next window

  std::vector<std::shared_ptr<const ShardFile>> shards_;
  int64_t batch_size_, block_size_, vocab_size_;
  bool shuffle_;
  mutable at::Generator generator_;  // mutable: reading its state locks it
  std::vector<int64_t> order_;
  int64_t epoch_ = 0, index_ = 0, offset_ = 0;
  torch::Tensor x_, y_;
};

}  // namespace gpt2
