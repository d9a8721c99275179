#pragma once
/// GPT-2's byte-level BPE tokenizer: OpenAI's encoder.py (and tiktoken's
/// "gpt2" encoding) in C++, without LibTorch. Any byte string encodes, and
/// decode(encode(bytes)) == bytes for every byte string.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gpt2 {

/// The directory with GPT-2's encoder.json and vocab.bpe: the first of
/// $GPT2_BPE_DIR, the installed copy (<datadir>/gpt2/gpt2-bpe) and the
/// source tree's gpt2/text/gpt2-bpe that holds both files. Throws FileError
/// listing the places tried when none does.
std::filesystem::path default_bpe_dir();

/// The largest p in [1, limit] (limit < text.size()) where `text` may be cut
/// without changing its GPT-2 ids: encode(text[0, p)) followed by
/// encode(text[p, end)) equals encode(text). text[p] is then an ASCII space,
/// tab, newline or carriage return and the character ending at p - 1 is not
/// white space (pretokenizer.cpp argues why that is enough). 0 when there is
/// none. Lets a long text be tokenized in pieces, on several threads.
std::size_t safe_cut(std::string_view text, std::size_t limit);

/// Text <-> GPT-2 token ids. Cheap to copy (the tables are shared and
/// immutable); every const method is safe to call from several threads.
class Tokenizer {
 public:
  /// Loads from default_bpe_dir().
  static Tokenizer gpt2();
  /// Loads encoder.json and vocab.bpe from `dir`.
  static Tokenizer from_dir(const std::filesystem::path& dir);
  /// Loads the two files, checking each one's sha256 against GPT-2's.
  /// Throws FileError naming the file for a missing, unreadable, damaged
  /// (both hashes given) or malformed file.
  static Tokenizer from_files(const std::filesystem::path& encoder_json,
                              const std::filesystem::path& vocab_bpe);

  /// The longest piece of the pre-tokenizer (a run of letters, digits or
  /// other characters between the splits) merged whole: a longer one is
  /// merged in pieces of this many bytes, each on its own, which keeps the
  /// cost linear and the memory small on a text of one huge "word". Up to
  /// this length the ids equal tiktoken's; past it, ids may differ at the
  /// cuts (the bytes, and decode(), are the same).
  static constexpr std::size_t kMaxPieceBytes = 65536;

  /// Token ids of `text` (any bytes; invalid UTF-8 too). Special tokens such
  /// as "<|endoftext|>" are plain text unless `allow_special`, then they
  /// become their id (50256), as tiktoken's encode(text, "all") does.
  /// Pieces longer than kMaxPieceBytes are merged in chunks.
  std::vector<std::int32_t> encode(std::string_view text,
                                   bool allow_special = false) const;
  /// encode() of each text, on up to `threads` threads; results in order.
  std::vector<std::vector<std::int32_t>> encode_batch(
      const std::vector<std::string>& texts, bool allow_special = false,
      int threads = 2) const;

  /// The bytes of `ids` joined (may be invalid UTF-8 when a multi-byte
  /// character is cut). Throws InputError naming the id, its position and
  /// the vocabulary range for an id outside it.
  std::string decode(const std::vector<std::int32_t>& ids) const;
  /// The bytes of one token; InputError for an id outside the vocabulary.
  std::string decode_token(std::int32_t id) const;

  /// Id of <|endoftext|> (50256).
  std::int32_t eot_token() const;
  /// Number of tokens, special ones included (50257).
  std::int32_t vocab_size() const;

 private:
  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace gpt2
