#pragma once
// Where prepare_dataset's ids go: nanoGPT's train.bin / val.bin, or llm.c's
// shards. Every file is staged beside its target and renamed into place
// (gpt2/file/atomic_file.h). Internal to gpt2::train.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpt2/file/atomic_file.h"
#include "gpt2/train/dataset.h"

namespace gpt2::detail {

/// Takes the ids in order; finish() makes the files.
class TokenSink {
 public:
  virtual ~TokenSink() = default;
  /// Appends `ids` to the val part (`val`) or the train part.
  virtual void add(bool val, const std::vector<int32_t>& ids) = 0;
  /// Checks the counts and makes the files; fills meta's counts.
  virtual void finish(DatasetMeta& meta) = 0;
  /// Tokens taken so far.
  int64_t tokens() const { return tokens_; }

 protected:
  void narrow(const std::vector<int32_t>& ids);  // ids -> buffer_ as uint16
  std::vector<uint16_t> buffer_;
  int64_t tokens_ = 0;
};

/// train.bin and val.bin, committed together at finish() once both hold at
/// least 2 tokens. `bytes` are the train and val bytes, for the message.
std::unique_ptr<TokenSink> nanogpt_sink(const std::string& dir, double val_fraction,
                                        uint64_t train_bytes, uint64_t total_bytes);

/// NAME_val_000000.bin, NAME_train_000001.bin, ... of `shard_tokens` ids
/// each (the last may hold fewer). The val shard waits until the train
/// shards hold 2 tokens; each train shard is committed when full. finish()
/// removes NAME's shards past the last one written.
std::unique_ptr<TokenSink> shard_sink(const std::string& dir, const std::string& name,
                                      int64_t shard_tokens);

}  // namespace gpt2::detail
