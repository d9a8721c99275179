#pragma once
/// The two layouts `gpt2 train --data DIR` reads: nanoGPT's (DIR/train.bin,
/// DIR/val.bin, DIR/meta.json) and a folder of llm.c or build-nanogpt
/// shards (DIR/*_train_*.bin or .npy, DIR/*_val_*; a meta.json beside them
/// is optional: without one the shards are GPT-2 BPE ids, vocabulary 50257,
/// as llm.c's and build-nanogpt's scripts write them).

#include <cstdint>
#include <memory>
#include <string>

#include "gpt2/train/dataset.h"
#include "gpt2/train/token_loader.h"

namespace gpt2 {

/// How a prepared-data folder stores its tokens.
enum class DataLayout { kNanoGPT, kShards };

/// The layout of `dir`: shards when its meta.json says "format": "llmc" or
/// when it has no train.bin but train shards; nanoGPT's when it has
/// train.bin. Throws FileError naming the folder when it has neither.
DataLayout data_layout(const std::string& dir);

/// The meta of a shard folder without meta.json: GPT-2's tokenizer and
/// vocabulary, the token counts from the shards' headers. Throws
/// FormatError naming a damaged shard, FileError when no train or no val
/// shard is there.
DatasetMeta shard_folder_meta(const std::string& dir);

/// The meta of nanoGPT's own folder (train.bin and val.bin, no meta.json):
/// its meta.pkl's character vocabulary, or GPT-2's BPE where there is none;
/// the counts from the files' sizes. FileError for a missing split or an
/// odd byte count, FormatError for a meta.pkl that is not an alphabet.
DatasetMeta nanogpt_folder_meta(const std::string& dir);

/// A trainer's three sources: the training stream (seed `seed`), and the
/// evaluation sources of train and val (reseeded at every evaluation).
/// nanoGPT's layout: random windows (TokenLoader). Shards: contiguous
/// windows (ShardLoader), the train shards shuffled per epoch, the
/// evaluations reading from the first window of the shards in name order.
struct BatchSources {
  std::unique_ptr<BatchSource> train, eval_train, eval_val;
};

/// Opens `dir`'s sources for (batch_size, block_size) windows of ids below
/// `vocab_size` (checked as windows are read, for shards).
BatchSources open_batch_sources(const std::string& dir, int64_t batch_size, int64_t block_size,
                                int64_t vocab_size, uint64_t seed, uint64_t eval_train_seed,
                                uint64_t eval_val_seed);

}  // namespace gpt2
