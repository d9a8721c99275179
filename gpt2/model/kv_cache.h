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
  /// dtype and device (the model's).
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
                                                 const torch::Tensor& v);
  /// Marks `t` more positions filled; TORCH_CHECKs that they fit.
  void advance(int64_t t);

 private:
  std::vector<torch::Tensor> keys_, values_;  // n_layer x (B, nh, block_size, hs)
  int64_t capacity_, batch_, length_ = 0;
};

}  // namespace gpt2
