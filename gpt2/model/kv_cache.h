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
///
/// A cache made with `fixed_shapes` also serves decoding steps whose
/// shapes do not change from token to token (GPTImpl::forward_step), which
/// a CUDA graph can capture once and replay: such a step writes its one
/// position at the device's copy of length() (sync_step() sets it) and
/// attends over every slot, masked on the device (step_mask()). Its slots
/// start at zero, since a masked slot is still read and must be finite.
class KVCache {
 public:
  /// Room for `batch` rows of config.block_size() positions, in `options`'
  /// dtype and device (the model's); `fixed_shapes` as above. InputError
  /// for a batch below 1 or one whose cache cannot be allocated; every
  /// check below is one too.
  KVCache(const GPTConfig& config, int64_t batch, const torch::TensorOptions& options,
          bool fixed_shapes = false);

  /// Positions filled so far: the absolute position of the next token.
  int64_t length() const { return length_; }
  /// Positions it can hold: block_size.
  int64_t capacity() const { return capacity_; }
  /// Rows.
  int64_t batch() const { return batch_; }
  /// Forgets every position and any padding (the memory is kept).
  void clear();

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

  // --- fixed-shape steps ---------------------------------------------------

  /// Whether the cache was made with fixed_shapes.
  bool fixed_shapes() const { return fixed_; }
  /// Names the tensors a fixed-shape step reads and writes (slots,
  /// padding): it changes whenever they are allocated anew (keep_rows,
  /// append_rows, set_padding, clear), and no two caches share one, so a
  /// CUDA graph captured over the cache is stale once it differs.
  int64_t layout() const { return layout_; }
  /// Copies length() into the device tensor a fixed-shape step reads: call
  /// it before each step, outside any graph capture. InputError unless the
  /// cache has fixed shapes and room for one more position.
  void sync_step();
  /// While alive, append() writes the one new position of each layer at
  /// the device's copy of length() and returns every slot, (B, nh,
  /// block_size, hs): GPTImpl::forward_step opens one. Checks, on the host
  /// only, that the cache has fixed shapes.
  class Step {
   public:
    explicit Step(KVCache& cache);
    ~Step() { cache_.stepping_ = false; }
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

   private:
    KVCache& cache_;
  };
  /// The position id of each row's new token, (B, 1) int64: the device
  /// length less the row's pad.
  torch::Tensor step_positions() const;
  /// (B, 1, 1, block_size) bool, true where the new token may not look: the
  /// slots after it and a row's padded slots.
  torch::Tensor step_mask() const;

 private:
  std::pair<torch::Tensor, torch::Tensor> append_step(size_t layer, const torch::Tensor& k,
                                                      const torch::Tensor& v);
  void set_step_pads();  // step_pads_ from padding_, anew

  std::vector<torch::Tensor> keys_, values_;  // n_layer x (B, nh, block_size, hs)
  torch::Tensor padding_;                     // (B,) int64, or undefined: none
  int64_t capacity_, batch_, length_ = 0;
  // Fixed shapes: the device's length (1) and pads (B,), always defined,
  // and the slot indices (block_size); the layout's name.
  bool fixed_ = false, stepping_ = false;
  torch::Tensor step_length_, step_pads_, slots_;
  int64_t layout_ = 0;
};

}  // namespace gpt2
