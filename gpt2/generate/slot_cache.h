#pragma once
/// A KV cache with a slot per sequence, each at its own length: the store
/// of a batch whose sequences join and leave between steps (BatchDecoder, a
/// server's scheduler). A sequence's keys and values stay in its slot while
/// it runs. Joining is a prefill into a free slot, leaving frees one, and a
/// step writes each row's new position where that row's length says, read
/// from the device: so a step's shapes depend only on how many slots it
/// covers, and a CUDA graph of it (DecodeStep) stays valid while sequences
/// come and go.

#include <torch/types.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "gpt2/generate/kv_cache.h"
#include "gpt2/model/config.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// Per-layer keys and values, (slots, n_head, block_size, head_size) each,
/// zeros at first (a step reads masked slots, which must be finite), and
/// one length per slot, kept on the host and copied to the device for
/// each step (sync).
class SlotCache : public KVStore {
 public:
  /// `slots` sequences of config.block_size() positions in `options`' dtype
  /// and device (the model's). InputError for slots below 1 or a cache that
  /// cannot be allocated; every check below is one too.
  SlotCache(const GPTConfig& config, int64_t slots, const torch::TensorOptions& options);

  /// Sequences it holds room for.
  int64_t slots() const { return static_cast<int64_t>(lengths_.size()); }
  /// Positions a slot holds: block_size.
  int64_t capacity() const { return capacity_; }
  /// Positions slot `slot` holds, [0, length).
  int64_t length(int64_t slot) const;
  /// Forgets slot `slot`'s positions: it is free (length 0).
  void free(int64_t slot);
  /// Copies slot `from`'s filled positions into slot `to`, which takes its
  /// length: the last row of a batch fills the place of one that left.
  void move(int64_t from, int64_t to);

  /// Runs `model` over idx (k, T), row i from position 0 into slot
  /// into[i] (k distinct slots), and sets that slot's length to
  /// lengths[i] (1 <= lengths[i] <= T): what follows a row's length is
  /// right padding, written but never attended to. The forward is
  /// causal, so the padding changes no real position.
  void prefill(GPTImpl& model, const torch::Tensor& idx, const std::vector<int64_t>& into,
               const std::vector<int64_t>& lengths);

  /// Copies the lengths of slots [0, rows) to the device, where step()
  /// reads them: before each step, outside any CUDA graph capture. Checks
  /// that each of those slots has room for one more position.
  void sync(int64_t rows);
  /// One step over slots [0, rows): idx (rows, 1) on the model's device
  /// holds each slot's token at position length(slot) as last synced; its
  /// keys and values are written there, and it attends over slots [0,
  /// span) of its row, masked past its position. -> the logits (rows,
  /// vocab_size). `span` is capacity() for a step of fixed shapes (what a
  /// CUDA graph captures), or the longest synced length + 1 (the filled
  /// positions only). A free slot steps too, at position 0; its logits mean
  /// nothing. Lengths do not move: advance() does that.
  torch::Tensor step(GPTImpl& model, const torch::Tensor& idx, int64_t span);
  /// Lengths of slots [0, rows) one more, after a step.
  void advance(int64_t rows);

  /// The KVStore side, which prefill() and step() open for the model.
  std::pair<torch::Tensor, torch::Tensor> append(size_t layer, const torch::Tensor& k,
                                                 const torch::Tensor& v) override;

 private:
  enum class Mode { kNone, kPrefill, kStep };
  class Open;  // sets mode_ for one forward

  void check_slot(int64_t slot, const char* what) const;

  std::vector<torch::Tensor> keys_, values_;  // n_layer x (slots, nh, block_size, hs)
  std::vector<int64_t> lengths_;              // per slot, the host's
  int64_t capacity_;
  torch::Tensor device_lengths_;  // (slots,) int64: the lengths as last synced
  torch::Tensor positions_;       // (block_size,) int64: 0, 1, ...
  Mode mode_ = Mode::kNone;
  torch::Tensor into_;            // prefill: (k,) int64, the slots written
  int64_t span_ = 0;              // step: the slots attended
};

}  // namespace gpt2
