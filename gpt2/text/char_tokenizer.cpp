#include "gpt2/text/char_tokenizer.h"

#include <algorithm>
#include <cstdio>

#include "gpt2/error.h"

namespace gpt2 {
namespace {

// The code points of UTF-8 `text` with the byte offset of each; InputError
// naming the offset of the first malformed sequence.
std::vector<std::pair<char32_t, size_t>> decode_utf8(std::string_view text) {
  std::vector<std::pair<char32_t, size_t>> out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    const int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    bool ok = len > 0 && i + len <= text.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      ok = (c >> 6) == 0x2;
      cp = (cp << 6) | (c & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      throw InputError("text is not valid UTF-8 at byte offset " + std::to_string(i) +
                       " (byte " + hex + ")");
    }
    out.emplace_back(cp, i);
    i += static_cast<size_t>(len);
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string shown(char32_t cp) {
  std::string s;
  append_utf8(s, cp);
  char hex[16];
  std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(cp));
  return cp >= 0x20 && cp != 0x7F ? "'" + s + "' (" + hex + ")" : std::string(hex);
}

}  // namespace

CharTokenizer::CharTokenizer(std::vector<char32_t> chars) : chars_(std::move(chars)) {}

CharTokenizer CharTokenizer::from_text(std::string_view text) {
  if (text.empty()) throw InputError("cannot build a character alphabet from empty text");
  std::vector<char32_t> chars;
  for (const auto& [cp, offset] : decode_utf8(text)) chars.push_back(cp);
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  return CharTokenizer(std::move(chars));
}

CharTokenizer CharTokenizer::from_alphabet(std::string_view alphabet) {
  if (alphabet.empty()) throw InputError("the character alphabet is empty");
  std::vector<char32_t> chars;
  for (const auto& [cp, offset] : decode_utf8(alphabet)) chars.push_back(cp);
  std::vector<char32_t> sorted = chars;
  std::sort(sorted.begin(), sorted.end());
  auto repeat = std::adjacent_find(sorted.begin(), sorted.end());
  if (repeat != sorted.end()) {
    throw InputError("the character alphabet holds " + shown(*repeat) + " more than once");
  }
  return CharTokenizer(std::move(chars));
}

std::vector<std::int32_t> CharTokenizer::encode(std::string_view text) const {
  // Ids by code point: a sorted copy with each character's id beside it.
  std::vector<std::pair<char32_t, std::int32_t>> index;
  for (size_t i = 0; i < chars_.size(); ++i) index.emplace_back(chars_[i], static_cast<std::int32_t>(i));
  std::sort(index.begin(), index.end());
  std::vector<std::int32_t> ids;
  ids.reserve(text.size());
  for (const auto& [cp, offset] : decode_utf8(text)) {
    auto it = std::lower_bound(index.begin(), index.end(), std::make_pair(cp, INT32_MIN));
    if (it == index.end() || it->first != cp) {
      throw InputError("character " + shown(cp) + " at byte offset " + std::to_string(offset) +
                       " is not in the alphabet of " + std::to_string(chars_.size()) +
                       " characters");
    }
    ids.push_back(it->second);
  }
  return ids;
}

std::string CharTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size()) {
      throw InputError("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                       " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
    }
    append_utf8(out, chars_[static_cast<size_t>(ids[i])]);
  }
  return out;
}

std::string CharTokenizer::alphabet() const {
  std::string out;
  for (char32_t cp : chars_) append_utf8(out, cp);
  return out;
}

}  // namespace gpt2
