#pragma once
/// Token shards as llm.c and build-nanogpt write large corpora: llm.c's
/// `.bin` (a header of 256 int32: magic 20240520, version 1, token count;
/// then the tokens as uint16, as `dev/data/data_common.py` writes them and
/// `llmc/dataloader.h` reads them) and build-nanogpt's `.npy` (a numpy
/// version 1-3 array of '<u2', one dimension, C order). Files are named
/// NAME_val_000000.bin, NAME_train_000001.bin, ... (the val shard first).

#include <cstdint>
#include <string>
#include <vector>

#include "gpt2/file/read_file.h"

namespace gpt2 {

/// llm.c's shard header: 256 int32, of which these three are used.
inline constexpr int32_t kShardMagic = 20240520;
inline constexpr int32_t kShardVersion = 1;
inline constexpr int64_t kShardHeaderInts = 256;
inline constexpr int64_t kShardHeaderBytes = kShardHeaderInts * 4;

/// The 1024 header bytes of an llm.c shard holding `tokens` tokens.
std::vector<int32_t> shard_header(int64_t tokens);

/// The file name of shard `index` of `split` ("train" or "val"):
/// NAME_val_000000.bin, as llm.c's fineweb.py names them.
std::string shard_name(const std::string& name, const std::string& split, int64_t index);

/// A read-only memory map of one shard's tokens. The header is checked at
/// open against the file's size; the descriptor stays open so that
/// check_size() can see a file cut short later.
class ShardFile {
 public:
  /// Maps `path` (".bin": llm.c; ".npy": numpy). Throws FormatError naming
  /// the shard for a bad magic, version or npy header, or a token count
  /// that does not match the file's size; FileError for a file that cannot
  /// be read.
  explicit ShardFile(const std::string& path);
  ~ShardFile();
  ShardFile(const ShardFile&) = delete;
  ShardFile& operator=(const ShardFile&) = delete;

  /// Number of tokens.
  int64_t size() const { return size_; }
  /// The tokens (size() of them), valid while this object lives.
  const uint16_t* data() const { return data_; }
  const std::string& path() const { return file_.path(); }
  /// Throws FormatError naming the shard if the file's size is no longer
  /// what it was at open (a shard rewritten or cut short under a run: its
  /// mapped pages past the new end would fault).
  void check_size() const;

 private:
  InputFile file_;
  void* map_ = nullptr;
  uint64_t map_bytes_ = 0;
  const uint16_t* data_ = nullptr;
  int64_t size_ = 0;
};

/// The shard files of `split` ("train" or "val") in `dir`: names holding
/// "_train_" / "_val_" and ending ".bin" or ".npy", sorted by name.
std::vector<std::string> list_shards(const std::string& dir, const std::string& split);

}  // namespace gpt2
