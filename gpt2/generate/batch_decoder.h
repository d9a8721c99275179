#pragma once
/// Continuous batching: sequences decoded together, one token each per
/// step, that join and leave the batch between steps (a server's scheduler
/// adds a request when it arrives and drops it when it ends). Sequences of
/// different lengths share one forward through a left-padded KV cache
/// (KVCache::set_padding), so each one's logits are those it has alone.

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "gpt2/model/gpt.h"
#include "gpt2/model/kv_cache.h"

namespace gpt2 {

/// The sequences of one batch and their cache.
class BatchDecoder {
 public:
  /// Decodes with `model` (which must outlive this), with a KV cache or, if
  /// `use_cache` is false, recomputing every sequence's context per step
  /// (nanoGPT's way; the same logits).
  explicit BatchDecoder(GPTImpl& model, bool use_cache = true);

  /// Adds a sequence starting with `prompt`; returns its id (0, 1, ... in
  /// the order added). Throws InputError for an empty prompt or an id
  /// outside the vocabulary. Its prompt is prefilled alone, here, and its
  /// cache spliced beside the running rows' (KVCache::append_rows), which
  /// keep theirs; the next next_logits() decodes all of them.
  int64_t add(const std::vector<int64_t>& prompt);
  /// Drops the sequence `id` from the batch; the others keep their cache.
  /// Throws InputError unless it is in the batch.
  void remove(int64_t id);

  /// The sequences in the batch, in the row order of next_logits().
  const std::vector<int64_t>& ids() const { return order_; }
  /// Whether no sequence is left.
  bool empty() const { return order_.empty(); }
  /// The tokens of sequence `id`: its prompt and everything appended.
  const std::vector<int64_t>& tokens(int64_t id) const;

  /// The logits of every sequence's next token, (rows, vocab_size), rows in
  /// ids() order. A context longer than block_size is cropped to its last
  /// block_size tokens, as nanoGPT does; from then on (positions shift, so
  /// no cached key stays valid) each call runs the cropped contexts again.
  /// Throws InputError for an empty batch, or when append() did not follow
  /// the previous call.
  torch::Tensor next_logits();
  /// Appends tokens[r] to the sequence of row r (ids() order), one per row.
  void append(const std::vector<int64_t>& tokens);

 private:
  torch::Tensor rebuild();  // every context again, padded on the left

  GPTImpl& model_;
  bool use_cache_;
  int64_t next_id_ = 0;
  std::map<int64_t, std::vector<int64_t>> tokens_;
  std::vector<int64_t> order_;
  std::optional<KVCache> cache_;
  bool cache_valid_ = false;  // the cache holds every token but each row's last
  bool awaiting_append_ = false;
};

}  // namespace gpt2
