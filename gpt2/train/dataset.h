#pragma once
/// Prepared data. nanoGPT's layout: DIR/train.bin and DIR/val.bin hold the
/// token ids as uint16, DIR/meta.json names the tokenizer (and, for the
/// character-level one, its alphabet). Folders as nanoGPT's own prepare.py
/// scripts leave them read too: a character vocabulary in DIR/meta.pkl
/// (shakespeare_char), or no meta at all for GPT-2 BPE ids (shakespeare,
/// openwebtext). llm.c's: DIR/NAME_val_000000.bin,
/// DIR/NAME_train_000001.bin, ... (data/shard_file.h) and the same meta.json
/// with "format": "llmc". data/data_folder.h reads either.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gpt2 {

/// What meta.json says.
struct DatasetMeta {
  /// "gpt2" (GPT-2's BPE) or "char" (CharTokenizer).
  std::string tokenizer;
  /// Ids are in [0, vocab_size).
  int64_t vocab_size = 0;
  /// The character tokenizer's alphabet in id order; empty for gpt2.
  std::string alphabet;
  /// Tokens in train.bin and val.bin.
  int64_t train_tokens = 0;
  /// Tokens in val.bin.
  int64_t val_tokens = 0;
  /// "nanogpt" (train.bin, val.bin) or "llmc" (token shards).
  std::string format = "nanogpt";
  /// Shard files written, val included (llmc only).
  int64_t shards = 0;
  /// Where this was read from: "meta.json"; "meta.pkl" (nanoGPT's
  /// character vocabulary); "none" (a folder with no meta: nanoGPT's or
  /// llm.c's GPT-2 BPE ids, vocabulary 50257).
  std::string source = "meta.json";
};

/// What a folder's tokens are and where that was read, for a command to
/// print: "char tokenizer, 65 ids, from nanoGPT's meta.pkl", "gpt2
/// tokenizer, 50257 ids; no meta: GPT-2 BPE ids as uint16, as nanoGPT's
/// GPT-2-token datasets".
std::string describe_dataset(const DatasetMeta& meta);

/// The formats prepare_dataset writes: "nanogpt", "llmc".
const std::vector<std::string>& data_format_names();

/// How prepare_dataset reads and writes.
struct PrepareOptions {
  /// "gpt2" or "char".
  std::string tokenizer = "gpt2";
  /// "nanogpt" or "llmc".
  std::string format = "nanogpt";
  /// nanogpt: the share of the bytes, at the end, that becomes val.bin.
  double val_fraction = 0.1;
  /// llmc: tokens per shard (llm.c's fineweb.py: 10^8); the first shard is val.
  int64_t shard_tokens = 100'000'000;
  /// llmc: the shards' NAME; empty: the folder's name.
  std::string shard_name;
  /// Tokenizer threads; 0: the cores this process may run on.
  int threads = 0;
  /// Bytes per piece handed to a thread (longer only where no safe cut is).
  std::size_t piece_bytes = 1 << 20;
  /// Called now and then with the bytes read, the bytes in all (0 when
  /// standard input makes it unknown) and the tokens written.
  std::function<void(uint64_t bytes, uint64_t total_bytes, int64_t tokens)> progress;
};

/// The tokenizer names prepare_dataset accepts: "gpt2", "char".
const std::vector<std::string>& tokenizer_names();

/// Tokenizes the inputs (files, folders of files, "-" for standard input;
/// each file a document, separated by <|endoftext|> for gpt2) in pieces on
/// options.threads threads, in bounded memory, and writes `dir` (created if
/// needed; every file replaced atomically):
///  - nanogpt: the concatenated bytes split at 1 - val_fraction (moved back
///    to a character boundary) as nanoGPT's prepare.py does, each part
///    tokenized on its own, train.bin, val.bin and meta.json; nothing is
///    replaced unless all three can be.
///  - llmc: the ids in shards of shard_tokens, the first one val, as llm.c's
///    fineweb.py (each document starts with <|endoftext|> for gpt2), and
///    meta.json; shards of an earlier run past the new last are removed.
///    The shard name is a plain name without "_train_" or "_val_".
/// Temporaries that a killed run left in `dir` are removed first.
/// Throws InputError for empty input, an unknown tokenizer or format, a
/// fraction outside (0, 1), a shard name that is not plain, or a split with
/// fewer than 2 tokens (one input and its target), ConfigError for ids that
/// do not fit uint16, FileError for an input inside `dir` (it would be
/// overwritten: refused before anything is written) or naming a file that
/// cannot be read or written.
DatasetMeta prepare_dataset(const std::vector<std::string>& inputs, const std::string& dir,
                            const PrepareOptions& options);
/// prepare_dataset in nanoGPT's layout with `tokenizer` and `val_fraction`.
DatasetMeta prepare_dataset(const std::vector<std::string>& inputs, const std::string& dir,
                            const std::string& tokenizer, double val_fraction = 0.1);

/// What DIR holds, from the first of: DIR/meta.json (`gpt2 prepare`'s);
/// DIR/meta.pkl beside train.bin (nanoGPT's character vocabulary, read by
/// read_nanogpt_meta); train.bin and val.bin alone (GPT-2 BPE ids, as
/// nanoGPT's GPT-2-token datasets are); token shards alone (GPT-2's
/// tokenizer and the shards' counts, shard_folder_meta). The token counts
/// of a folder without meta.json are its files' sizes. Throws FileError
/// naming the folder when it holds none of these, a meta.json that is
/// malformed or that marks a `gpt2 prepare` that did not finish, or a
/// token file of an odd byte count; FormatError for a meta.pkl that is
/// not a character vocabulary.
DatasetMeta read_dataset_meta(const std::string& dir);

/// The meta.json `gpt2 prepare` leaves while it replaces a folder's token
/// files: read_dataset_meta refuses the folder until the new meta.json is
/// written, so that a prepare killed midway never leaves files that read
/// as another dataset.
std::string unfinished_dataset_marker();

/// The rule for running a model of `vocab_size` ids (the file `model`) on
/// the data in `dir`: the model's vocabulary holds every id of the data, and
/// character-level data goes only to a model of exactly its ids (else its
/// ids would mean other things). Throws ConfigError naming both otherwise.
void check_data_for_model(const DatasetMeta& data, const std::string& dir, int64_t vocab_size,
                          const std::string& model);

/// Text <-> ids with a dataset's tokenizer.
struct TextCodec {
  /// Ids of a text.
  std::function<std::vector<int32_t>(std::string_view)> encode;
  /// Text of ids.
  std::function<std::string(const std::vector<int32_t>&)> decode;
  /// The id a sample starts from: "\n" for char, <|endoftext|> for gpt2.
  int32_t start_token = 0;
};

/// The codec of a dataset's tokenizer.
TextCodec text_codec(const DatasetMeta& meta);

}  // namespace gpt2
