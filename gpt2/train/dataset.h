#pragma once
/// nanoGPT's prepared-data layout: DIR/train.bin and DIR/val.bin hold the
/// token ids as uint16, DIR/meta.json names the tokenizer (and, for the
/// character-level one, its alphabet).

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
};

/// The tokenizer names prepare_dataset accepts: "gpt2", "char".
const std::vector<std::string>& tokenizer_names();

/// Reads the input files, concatenated, splits the text at 1 - val_fraction
/// of its bytes (at a character boundary) as nanoGPT's prepare.py does,
/// tokenizes both parts and writes the three files into `dir` (created if
/// needed; each file replaced atomically). Throws InputError for empty
/// input, an unknown tokenizer, a fraction outside (0, 1) or a split with
/// fewer than 2 tokens (one input and its target), ConfigError for ids that
/// do not fit uint16, FileError naming a file that cannot be read or written.
DatasetMeta prepare_dataset(const std::vector<std::string>& inputs, const std::string& dir,
                            const std::string& tokenizer, double val_fraction = 0.1);

/// Reads DIR/meta.json. Throws FileError naming it when it is missing or
/// malformed.
DatasetMeta read_dataset_meta(const std::string& dir);

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
