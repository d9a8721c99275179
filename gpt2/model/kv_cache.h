#pragma once
/// Keys and values of every block, kept between calls for incremental
/// decoding: the prompt is run once, then each new token attends to the
/// cached positions instead of recomputing them.

#include <torch/types.h>

#include <utility>
#include <vector>

#include "gpt2/model/config.h"

namespace gpt2 {

/// Per-layer key and value tensors, (B, n_head, block_size, head_size) each,
/// allocated once at construction: appending never reallocates. Positions
/// [0, length()) are filled; new tokens take absolute positions from
/// length() on.
class KVCache {
 public:
  /// Room for `batch` rows of config.block_size() positions, in `options`'
  /// dtype and device (the model's). InputError for a batch below 1 or
  /// one whose cache cannot be allocated; every check below is one too.
  KVCache(const GPTConfig& config, int64_t batch, const torch::TensorOptions& options);

  /// Positions filled so far: the absolute position of the next token.
  int64_t length() const { return length_; }
  /// Positions it can hold: block_size.
  int64_t capacity() const { return capacity_; }
  /// Rows.
  int64_t batch() const { return batch_; }
  /// Forgets every position and any padding (the memory is kept).
  void clear() {
    length_ = 0;
    padding_ = torch::Tensor();
  }

  /// Left padding, for rows of different lengths in one batch: row r's
  /// first pads[r] positions hold no token. Its tokens then take position
  /// ids from 0 at slot pads[r], and no query attends to a padded slot (a
  /// padded slot's own query sees only itself, so every value stays
  /// finite). Set on an empty cache; clear() removes it. Checks one
  /// pad per row, each in [0, capacity).
  void set_padding(const std::vector<int64_t>& pads);
  /// The pads as a (B,) int64 tensor on the cache's device, or an undefined
  /// tensor when no row is padded.
  const torch::Tensor& padding() const { return padding_; }
  /// Keeps only the rows `rows` (indices in [0, batch()), in that order),
  /// with their positions and padding: a row that finished leaves the batch.
  void keep_rows(const std::vector<int64_t>& rows);
  /// Appends the rows of `other` (a cache of the same model) after this
  /// one's, both sides aligned on the right: the shorter gains left padding
  /// (zeros, never attended to), and length() becomes the longer's. A row
  /// that joins a running batch is prefilled alone and spliced in this way.
  /// Checks that the shapes agree.
  void append_rows(const KVCache& other);

  /// Writes layer `layer`'s k, v (B, nh, T, hs) for positions [length(),
  /// length() + T) and returns views of k and v over [0, length() + T).
  /// length() itself moves only in advance(), once all layers have written.
  std::pair<torch::Tensor, torch::Tensor> append(size_t layer, const torch::Tensor& k,
                                                 const torch::Tensor& v);
  /// Marks `t` more positions filled; checks that they fit.
  void advance(int64_t t);
  /// Forgets the positions from `length` on (rejected draft tokens);
  /// checks 0 <= length <= length().
  void truncate(int64_t length);

 private:
  std::vector<torch::Tensor> keys_, values_;  // n_layer x (B, nh, block_size, hs)
  torch::Tensor padding_;                     // (B,) int64, or undefined: none
  int64_t capacity_, batch_, length_ = 0;
};

}  // namespace gpt2
