#pragma once
/// Continuous batching: sequences decoded together, one token each per
/// step, that join and leave the batch between steps (a server's scheduler
/// adds a request when it arrives and drops it when it ends). Each sequence
/// keeps its keys and values in a slot of its own (SlotCache) at its own
/// length, so sequences of different lengths share one forward and each
/// one's logits are those it has alone.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpt2/generate/decode_step.h"
#include "gpt2/generate/slot_cache.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// The sequences of one batch and their cache.
class BatchDecoder {
 public:
  /// Decodes with `model` (which must outlive this), with a KV cache or, if
  /// `use_cache` is false, recomputing every sequence's context per step
  /// (nanoGPT's way; the same logits). `steps` says how a step over the
  /// cache runs (DecodeSteps; the same logits to float rounding). `slots`:
  /// the sequences the cache is made for, here (0: as many as the first
  /// step has); when more are in the batch it is made again, twice as
  /// large, and every sequence prefilled again. InputError naming the
  /// slots and gigabytes where that cache cannot be allocated.
  explicit BatchDecoder(GPTImpl& model, bool use_cache = true,
                        DecodeSteps steps = DecodeSteps::kDynamic, int64_t slots = 0);

  /// Adds a sequence starting with `prompt`; returns its id (0, 1, ... in
  /// the order added). Throws InputError for an empty prompt or an id
  /// outside the vocabulary. The next next_logits() prefills it, with any
  /// other newcomers in one forward, then decodes it with the others, whose
  /// slots are untouched.
  int64_t add(const std::vector<int64_t>& prompt);
  /// Drops the sequence `id` from the batch; the others keep their cache.
  /// The last row takes its place (its slot is copied over), so the rows
  /// stay the first slots of the cache. Throws InputError unless it is in
  /// the batch.
  void remove(int64_t id);

  /// The sequences in the batch, in the row order of next_logits(); row r
  /// is slot r of the cache.
  const std::vector<int64_t>& ids() const { return order_; }
  /// Whether no sequence is left.
  bool empty() const { return order_.empty(); }
  /// The tokens of sequence `id`: its prompt and everything appended.
  const std::vector<int64_t>& tokens(int64_t id) const;

  /// The logits of every sequence's next token, (rows, vocab_size), rows in
  /// ids() order. A context longer than block_size is cropped to its last
  /// block_size tokens, as nanoGPT does; from then on (positions shift, so
  /// no cached key stays valid) each call prefills that sequence's cropped
  /// context again. Steps of fixed shapes run over the first 1, 2, 4, ...
  /// slots, the fewest that hold the rows, so a CUDA graph serves each
  /// of those counts.
  /// Throws InputError for an empty batch, or when append() did not follow
  /// the previous call.
  torch::Tensor next_logits();
  /// Appends tokens[r] to the sequence of row r (ids() order), one per row.
  /// Throws InputError, appending nothing, for a count other than the rows'
  /// or an id outside the vocabulary.
  void append(const std::vector<int64_t>& tokens);

  /// Whether the steps so far replayed a CUDA graph (DecodeSteps::kGraphed
  /// on a CUDA device), and, where they were asked to and did not, why.
  bool graphed() const { return step_ && step_->graphed() && step_->captures() > 0; }
  std::string why_not_graphed() const { return step_ ? step_->why_not_graphed() : ""; }
  /// CUDA graphs captured over the present cache: one per row count a step
  /// ran over (a cache made again, larger, captures its own afresh).
  int64_t captures() const { return step_ ? step_->captures() : 0; }

 private:
  void make_room();  // a cache with a slot for every row
  void prefill();    // the rows whose slot does not hold all their context but the last token

  GPTImpl& model_;
  bool use_cache_;
  DecodeSteps steps_;
  int64_t slots_;
  int64_t next_id_ = 0;
  std::map<int64_t, std::vector<int64_t>> tokens_;
  std::vector<int64_t> order_;         // row r is slot r
  std::unique_ptr<SlotCache> cache_;
  std::unique_ptr<DecodeStep> step_;   // over *cache_, for fixed-shape steps
  bool awaiting_append_ = false;
};

}  // namespace gpt2
