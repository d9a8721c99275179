#pragma once
/// Keys and values of every block, kept between calls for incremental
/// decoding: the prompt is run once, then each new token attends to the
/// cached positions instead of recomputing them. KVCache holds one length
/// for all its rows (generate's single sequence with prompt-lookup drafts);
/// SlotCache (slot_cache.h) a length per slot.

#include <torch/types.h>

#include <utility>
#include <vector>

#include "gpt2/model/config.h"
#include "gpt2/model/gpt.h"
#include "gpt2/model/kv_store.h"

namespace gpt2 {

/// Per-layer key and value tensors, (B, n_head, block_size, head_size) each,
/// allocated once at construction: appending never reallocates. Every row
/// holds positions [0, length()); new tokens take absolute positions from
/// length() on.
class KVCache : public KVStore {
 public:
  /// Room for `batch` rows of config.block_size() positions, in `options`'
  /// dtype and device (the model's). InputError for a batch below 1 or one
  /// whose cache cannot be allocated; every check below is one too.
  KVCache(const GPTConfig& config, int64_t batch, const torch::TensorOptions& options);

  /// Positions filled so far: the absolute position of the next token.
  int64_t length() const { return length_; }
  /// Positions it can hold: block_size.
  int64_t capacity() const { return capacity_; }
  /// Rows.
  int64_t batch() const { return batch_; }
  /// Forgets every position (the memory is kept).
  void clear() { length_ = 0; }

  /// Writes layer `layer`'s k, v (B, nh, T, hs) for positions [length(),
  /// length() + T) and returns views of k and v over [0, length() + T).
  /// length() itself moves only in advance(), once all layers have written.
  std::pair<torch::Tensor, torch::Tensor> append(size_t layer, const torch::Tensor& k,
                                                 const torch::Tensor& v) override;
  /// Marks `t` more positions filled; checks that they fit.
  void advance(int64_t t);
  /// Forgets the positions from `length` on (rejected draft tokens);
  /// checks 0 <= length <= length().
  void truncate(int64_t length);

 private:
  std::vector<torch::Tensor> keys_, values_;  // n_layer x (B, nh, block_size, hs)
  int64_t capacity_, batch_, length_ = 0;
};

/// Keys and values for `rows` sequences of config.block_size() positions:
/// n_layer tensors (rows, n_head, block_size, head_size) each, in
/// `options`, zeros when `zeros`. InputError naming the rows (as `unit`)
/// and the gigabytes where they cannot be allocated.
std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> allocate_kv(
    const GPTConfig& config, int64_t rows, const torch::TensorOptions& options, bool zeros,
    const char* unit);

/// Incremental decoding: idx (B, T) holds the tokens at absolute positions
/// [cache.length(), cache.length() + T); their keys and values go into
/// `cache`, which then advances by T. Returns the logits of the last
/// position (B, vocab_size), equal to model.forward_last over the whole
/// sequence. InputError for bad ids, a batch other than the cache's, or
/// positions past block_size (crop and clear() the cache).
torch::Tensor forward_cached(GPTImpl& model, const torch::Tensor& idx, KVCache& cache);
/// As forward_cached, but the logits of every new position, (B, T,
/// vocab_size): one forward checks several proposed tokens.
torch::Tensor forward_cached_all(GPTImpl& model, const torch::Tensor& idx, KVCache& cache);

/// InputError unless `k` (B, nh, T, hs) has the heads, width, dtype and
/// device of `slots` (B', nh, S, hs): a store made for another model or
/// dtype is named before anything is written.
void check_kv_matches(const torch::Tensor& slots, const torch::Tensor& k);

}  // namespace gpt2
