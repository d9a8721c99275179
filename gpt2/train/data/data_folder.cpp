#include "gpt2/train/data/data_folder.h"

#include <fmt/format.h>

#include <filesystem>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/io/nanogpt_meta.h"
#include "gpt2/text/char_tokenizer.h"
#include "gpt2/train/data/shard_file.h"
#include "gpt2/train/data/shard_loader.h"

namespace gpt2 {
namespace {

constexpr int64_t kGpt2Vocab = 50257;  // llm.c's and build-nanogpt's shards: GPT-2 BPE

bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::symlink_status(path, ec));
}

std::vector<std::shared_ptr<const ShardFile>> open_shards(const std::string& dir,
                                                          const std::string& split) {
  std::vector<std::shared_ptr<const ShardFile>> shards;
  for (const auto& path : list_shards(dir, split)) shards.push_back(std::make_shared<const ShardFile>(path));
  if (shards.empty()) {
    throw FileError(fmt::format("'{}' holds no {} shards (*_{}_*.bin or .npy)", dir, split, split));
  }
  return shards;
}

// Tokens in a uint16 token file, by its size.
int64_t token_count(const std::string& path) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  if (ec) throw FileError(fmt::format("cannot read '{}': {}", path, ec.message()));
  if (bytes % 2) {
    throw FileError(fmt::format("'{}' holds {} bytes, an odd count: not uint16 token ids", path, bytes));
  }
  return static_cast<int64_t>(bytes / 2);
}

}  // namespace

DataLayout data_layout(const std::string& dir) {
  if (exists(dir + "/meta.json") && read_dataset_meta(dir).format == "llmc") return DataLayout::kShards;
  if (exists(dir + "/train.bin")) return DataLayout::kNanoGPT;
  if (!list_shards(dir, "train").empty()) return DataLayout::kShards;
  throw FileError(fmt::format("'{}' holds neither train.bin nor train shards (*_train_*.bin or "
                              ".npy): prepare the data with `gpt2 prepare`", dir));
}

DatasetMeta shard_folder_meta(const std::string& dir) {
  DatasetMeta meta;
  meta.tokenizer = "gpt2";
  meta.vocab_size = kGpt2Vocab;
  meta.format = "llmc";
  meta.source = "none";
  for (const auto& shard : open_shards(dir, "train")) meta.train_tokens += shard->size();
  for (const auto& shard : open_shards(dir, "val")) meta.val_tokens += shard->size();
  return meta;
}

DatasetMeta nanogpt_folder_meta(const std::string& dir) {
  for (const char* split : {"train", "val"}) {
    if (!exists(dir + "/" + split + ".bin")) {
      throw FileError(fmt::format("'{}' holds train.bin but no {}.bin", dir, split));
    }
  }
  DatasetMeta meta;
  meta.train_tokens = token_count(dir + "/train.bin");
  meta.val_tokens = token_count(dir + "/val.bin");
  if (exists(dir + "/meta.pkl")) {
    const NanoGPTCharMeta chars = read_nanogpt_meta(dir + "/meta.pkl");
    for (const auto& c : chars.itos) meta.alphabet += c;
    try {
      CharTokenizer::from_alphabet(meta.alphabet);
    } catch (const InputError& e) {
      throw FormatError(fmt::format("'{}/meta.pkl': its characters are not an alphabet: {}", dir,
                                    e.what()));
    }
    meta.tokenizer = "char";
    meta.vocab_size = chars.vocab_size();
    meta.source = "meta.pkl";
  } else {
    meta.tokenizer = "gpt2";
    meta.vocab_size = kGpt2Vocab;
    meta.source = "none";
  }
  return meta;
}

BatchSources open_batch_sources(const std::string& dir, int64_t batch_size, int64_t block_size,
                                int64_t vocab_size, uint64_t seed, uint64_t eval_train_seed,
                                uint64_t eval_val_seed) {
  BatchSources s;
  if (data_layout(dir) == DataLayout::kNanoGPT) {
    auto train = std::make_shared<const TokenFile>(dir + "/train.bin");
    auto val = std::make_shared<const TokenFile>(dir + "/val.bin");
    // The splits and meta.json are one unit: counts that differ mean files
    // of two preparations (one was interrupted, or a file was copied in).
    const DatasetMeta meta = read_dataset_meta(dir);
    for (const auto& [file, count] : {std::pair{train, meta.train_tokens}, {val, meta.val_tokens}}) {
      if (file->size() != count) {
        throw FileError(fmt::format("'{}' does not belong with its meta.json: it holds {} tokens, "
                                    "meta.json says {}; prepare '{}' again", file->path(),
                                    file->size(), count, dir));
      }
    }
    s.train = std::make_unique<TokenLoader>(train, batch_size, block_size, seed);
    s.eval_train = std::make_unique<TokenLoader>(train, batch_size, block_size, eval_train_seed);
    s.eval_val = std::make_unique<TokenLoader>(val, batch_size, block_size, eval_val_seed);
    return s;
  }
  const auto train = open_shards(dir, "train"), val = open_shards(dir, "val");
  // Shards that `gpt2 prepare` wrote are one unit with their meta.json (a
  // folder of llm.c's own shards has none): a count or total that differs
  // means shards of two preparations, or one copied in.
  if (exists(dir + "/meta.json")) {
    const DatasetMeta meta = read_dataset_meta(dir);
    int64_t train_tokens = 0, val_tokens = 0;
    for (const auto& shard : train) train_tokens += shard->size();
    for (const auto& shard : val) val_tokens += shard->size();
    const auto shards = static_cast<int64_t>(train.size() + val.size());
    if (shards != meta.shards || train_tokens != meta.train_tokens || val_tokens != meta.val_tokens) {
      throw FileError(fmt::format(
          "the shards in '{}' do not belong with its meta.json: {} shards of {} train and {} val "
          "tokens, meta.json says {} of {} and {}; prepare '{}' again", dir, shards, train_tokens,
          val_tokens, meta.shards, meta.train_tokens, meta.val_tokens, dir));
    }
  }
  s.train = std::make_unique<ShardLoader>(train, batch_size, block_size, seed, true, vocab_size);
  s.eval_train = std::make_unique<ShardLoader>(train, batch_size, block_size, eval_train_seed,
                                               false, vocab_size);
  s.eval_val = std::make_unique<ShardLoader>(val, batch_size, block_size, eval_val_seed, false,
                                             vocab_size);
  return s;
}

}  // namespace gpt2
