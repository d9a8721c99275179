#include "gpt2/train/data/token_sinks.h"

#include <fmt/format.h>

#include <filesystem>
#include <utility>

#include "gpt2/error.h"
#include "gpt2/train/data/shard_file.h"

namespace gpt2::detail {
namespace {

class NanoGptSink : public TokenSink {
 public:
  NanoGptSink(const std::string& dir, double val_fraction, uint64_t train_bytes, uint64_t total)
      : meta_(dir + "/meta.json"), pkl_(dir + "/meta.pkl"), train_(dir + "/train.bin"), val_(dir + "/val.bin"), fraction_(val_fraction),
        train_bytes_(train_bytes), total_(total) {}

  void add(bool val, const std::vector<int32_t>& ids) override {
    narrow(ids);
    (val ? val_ : train_).append(buffer_.data(), buffer_.size() * 2);
    counts_[val] += static_cast<int64_t>(ids.size());
  }

  void finish(DatasetMeta& meta) override {
    for (const bool val : {false, true}) {
      if (counts_[val] < 2) {
        const uint64_t bytes = val ? total_ - train_bytes_ : train_bytes_;
        throw InputError(fmt::format("the {} split holds {} tokens ({} bytes of {}); at least 2 "
                                     "are needed for one input and its target: give more text "
                                     "or another val fraction than {}",
                                     val ? "val" : "train", counts_[val], bytes, total_, fraction_));
      }
    }
    meta.train_tokens = counts_[0];
    meta.val_tokens = counts_[1];
    // One unit with meta.json (and meta.pkl), written after: the old one is
    // first replaced by the unfinished marker and the old meta.pkl goes, so
    // a process killed between the renames leaves a folder the reader
    // refuses by name, not new splits under an old alphabet (nor, with no
    // meta at all, read as nanoGPT's GPT-2 ids).
    write_file_atomically(meta_, unfinished_dataset_marker());
    remove_marker(pkl_);
    train_.commit();
    val_.commit();
  }

 private:
  std::string meta_, pkl_;
  StagedFile train_, val_;
  double fraction_;
  uint64_t train_bytes_, total_;
  int64_t counts_[2] = {0, 0};
};

// The shards are one unit with meta.json: each is staged (written, closed
// and synced under a temporary name) as it fills, one open at a time, and
// none is renamed into place until the last is written. A failure or a
// signal before that leaves the old set whole and no temporary; then the
// old meta.json goes, the shards are renamed in, an earlier set's surplus
// shards are removed, and prepare_dataset writes the new meta.json.
class ShardSink : public TokenSink {
 public:
  ShardSink(const std::string& dir, const std::string& name, int64_t shard_tokens)
      : dir_(dir), name_(name), shard_tokens_(shard_tokens) {}

  void add(bool, const std::vector<int32_t>& ids) override {
    narrow(ids);
    std::size_t done = 0;
    while (done < buffer_.size()) {
      if (!current_) {
        current_ = std::make_unique<StagedFile>(path(index_));
        const std::vector<int32_t> header = shard_header(0);
        current_->append(header.data(), header.size() * 4);
      }
      const auto take = std::min<std::size_t>(buffer_.size() - done,
                                              static_cast<std::size_t>(shard_tokens_ - in_shard_));
      current_->append(buffer_.data() + done, take * 2);
      done += take;
      in_shard_ += static_cast<int64_t>(take);
      (index_ == 0 ? val_ : train_) += static_cast<int64_t>(take);
      if (in_shard_ == shard_tokens_) close_shard();
    }
  }

  void finish(DatasetMeta& meta) override {
    if (in_shard_ > 0) close_shard();
    if (train_ < 2) {
      throw InputError(fmt::format("the train shards hold {} tokens; at least 2 are needed for one "
                                   "input and its target, and the val shard takes the first {} "
                                   "of the {} tokens: give more text or a smaller --shard-tokens",
                                   train_, shard_tokens_, val_ + train_));
    }
    write_file_atomically(dir_ + "/meta.json", unfinished_dataset_marker());  // as NanoGptSink's
    for (auto& shard : staged_) shard->commit();
    staged_.clear();
    for (int64_t i = index_;; ++i) {  // an earlier set's shards past the last: stale
      std::error_code ec;
      if (!std::filesystem::remove(path(i), ec)) break;
    }
    meta.train_tokens = train_;
    meta.val_tokens = val_;
    meta.shards = index_;
  }

 private:
  std::string path(int64_t index) const {
    return dir_ + "/" + shard_name(name_, index == 0 ? "val" : "train", index);
  }

  void close_shard() {
    const std::vector<int32_t> header = shard_header(in_shard_);
    current_->write_at(0, header.data(), header.size() * 4);
    current_->close();
    staged_.push_back(std::move(current_));
    ++index_;
    in_shard_ = 0;
  }

  std::string dir_, name_;
  int64_t shard_tokens_;
  std::unique_ptr<StagedFile> current_;
  std::vector<std::unique_ptr<StagedFile>> staged_;  // closed, renamed in by finish()
  int64_t index_ = 0, in_shard_ = 0, val_ = 0, train_ = 0;
};

}  // namespace

void TokenSink::narrow(const std::vector<int32_t>& ids) {
  buffer_.assign(ids.begin(), ids.end());  // ranges checked by prepare_dataset
  tokens_ += static_cast<int64_t>(ids.size());
}

std::unique_ptr<TokenSink> nanogpt_sink(const std::string& dir, double val_fraction,
                                        uint64_t train_bytes, uint64_t total_bytes) {
  return std::make_unique<NanoGptSink>(dir, val_fraction, train_bytes, total_bytes);
}

std::unique_ptr<TokenSink> shard_sink(const std::string& dir, const std::string& name,
                                      int64_t shard_tokens) {
  return std::make_unique<ShardSink>(dir, name, shard_tokens);
}

}  // namespace gpt2::detail
