#include "gpt2/train/data/shard_loader.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <mutex>
#include <numeric>

#include "gpt2/error.h"

namespace gpt2 {

ShardLoader::ShardLoader(std::vector<std::shared_ptr<const ShardFile>> shards, int64_t batch_size,
                         int64_t block_size, uint64_t seed, bool shuffle, int64_t vocab_size)
    : shards_(std::move(shards)),
      batch_size_(batch_size),
      block_size_(block_size),
      vocab_size_(vocab_size),
      shuffle_(shuffle),
      generator_(at::make_generator<at::CPUGeneratorImpl>(seed)) {
  if (batch_size <= 0 || block_size <= 0) {
    throw InputError(fmt::format("batch size {} and block size {} must be positive", batch_size,
                                 block_size));
  }
  if (shards_.empty()) throw InputError("no token shards to read");
  // A shard shorter than one window (the tail of a corpus) gives no batch.
  std::vector<std::shared_ptr<const ShardFile>> usable;
  for (const auto& shard : shards_) {
    if (shard->size() >= batch_size * block_size + 1) usable.push_back(shard);
  }
  if (usable.empty()) {
    throw InputError(fmt::format("token shard '{}' ({} shards in all) holds {} tokens, too few "
                                 "for one batch of {} x {} tokens plus its next-token target",
                                 shards_.front()->path(), shards_.size(), shards_.front()->size(),
                                 batch_size, block_size));
  }
  shards_ = std::move(usable);
  x_ = torch::empty({batch_size, block_size}, torch::kInt64);
  y_ = torch::empty({batch_size, block_size}, torch::kInt64);
  start_epoch();
}

void ShardLoader::start_epoch() {
  const auto n = static_cast<int64_t>(shards_.size());
  order_.resize(static_cast<size_t>(n));
  if (shuffle_) {
    const torch::Tensor perm = torch::randperm(n, generator_, torch::kInt64);
    std::copy(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + n, order_.begin());
  } else {
    std::iota(order_.begin(), order_.end(), 0);
  }
}

const ShardFile& ShardLoader::next_window() {
  const int64_t window = batch_size_ * block_size_ + 1;
  if (offset_ + window > current_shard().size()) {
    offset_ = 0;
    if (++index_ == static_cast<int64_t>(order_.size())) {
      ++epoch_;
      index_ = 0;
      start_epoch();
    }
  }
  const ShardFile& shard = current_shard();
  shard.check_size();  // every batch: a shard cut short under the run is an error, not SIGBUS
  return shard;
}

Batch ShardLoader::next() {
  const ShardFile& shard = next_window();
  const int64_t n = batch_size_ * block_size_;
  const uint16_t* w = shard.data() + offset_;
  for (int64_t i = 0; i <= n; ++i) {
    if (w[i] >= vocab_size_) {
      throw FormatError(fmt::format("token shard '{}': id {} at token {} is outside the "
                                    "vocabulary [0, {})", shard.path(), w[i], offset_ + i,
                                    vocab_size_));
    }
  }
  int64_t* x = x_.data_ptr<int64_t>();
  int64_t* y = y_.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    x[i] = w[i];
    y[i] = w[i + 1];
  }
  offset_ += n;
  return {x_, y_};
}

void ShardLoader::skip(int64_t batches) {
  for (int64_t i = 0; i < batches; ++i) {
    next_window();
    offset_ += batch_size_ * block_size_;
  }
}

void ShardLoader::reseed(uint64_t seed) {
  {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.set_current_seed(seed);
  }
  epoch_ = index_ = offset_ = 0;
  start_epoch();
}

torch::Tensor ShardLoader::rng_state() const { return generator_state(generator_); }

void ShardLoader::set_rng_state(const torch::Tensor& state) {
  set_generator_state(generator_, state, "a shard loader");
}

std::string ShardLoader::position() const {
  return nlohmann::json{{"epoch", epoch_}, {"shard", index_}, {"offset", offset_}, {"order", order_}}
      .dump();
}

void ShardLoader::set_position(const std::string& position) {
  const auto fail = [&](const std::string& why) {
    return InputError(fmt::format("the saved data position {} does not fit these {} shards "
                                  "(from '{}' on): {}", position, shards_.size(),
                                  shards_.front()->path(), why));
  };
  int64_t epoch = 0, index = 0, offset = 0;
  std::vector<int64_t> order;
  try {
    const nlohmann::json j = nlohmann::json::parse(position);
    epoch = j.at("epoch").get<int64_t>();
    index = j.at("shard").get<int64_t>();
    offset = j.at("offset").get<int64_t>();
    order = j.at("order").get<std::vector<int64_t>>();
  } catch (const nlohmann::json::exception& e) {
    throw fail(e.what());
  }
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(shards_.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity) throw fail("the order is not a permutation of the shards");
  if (epoch < 0 || index < 0 || index >= static_cast<int64_t>(order.size())) throw fail("shard index out of range");
  if (offset < 0 || offset > shards_[static_cast<size_t>(order[static_cast<size_t>(index)])]->size()) {
    throw fail("offset past the shard's end");
  }
  epoch_ = epoch;
  index_ = index;
  offset_ = offset;
  order_ = std::move(order);
}

}  // namespace gpt2
