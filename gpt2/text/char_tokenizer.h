#pragma once
/// A character-level tokenizer, as nanoGPT's shakespeare_char: the ids are
/// the positions of the text's distinct Unicode characters in sorted order.
/// No LibTorch.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpt2 {

/// Text <-> ids over a fixed alphabet of Unicode code points (UTF-8 text).
class CharTokenizer {
 public:
  /// The alphabet of `text`: its distinct characters, sorted by code point
  /// (tiny Shakespeare gives 65). Throws InputError for empty text or
  /// invalid UTF-8, naming the byte offset.
  static CharTokenizer from_text(std::string_view text);
  /// The alphabet given as UTF-8, in id order, as alphabet() writes it.
  /// Throws InputError for an empty alphabet, invalid UTF-8 or a repeat.
  static CharTokenizer from_alphabet(std::string_view alphabet);

  /// Ids of `text`. Throws InputError naming the character and its byte
  /// offset when it is not in the alphabet.
  std::vector<std::int32_t> encode(std::string_view text) const;
  /// The characters of `ids` as UTF-8. Throws InputError naming the id,
  /// its position and the range for an id outside [0, vocab_size()).
  std::string decode(const std::vector<std::int32_t>& ids) const;

  /// The alphabet as UTF-8, character i being id i.
  std::string alphabet() const;
  /// Number of characters in the alphabet.
  std::int32_t vocab_size() const { return static_cast<std::int32_t>(chars_.size()); }

 private:
  explicit CharTokenizer(std::vector<char32_t> chars);
  std::vector<char32_t> chars_;  // sorted code points; id = index
};

}  // namespace gpt2
