#include "gpt2/text/detail/pretokenizer.h"

#include "gpt2/text/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

namespace gpt2::bpe {

// Unicode Table 3-7.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto at = [&](std::size_t k) {
    return static_cast<unsigned char>(s[i + k]);
  };
  const unsigned char c = at(0);
  if (c < 0x80) return 1;
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size() || at(1) < lo || at(1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    if ((at(k) & 0xC0) != 0x80) return 0;
  }
  return len;
}

namespace {

// Position of the first byte that is not part of well-formed UTF-8, or npos.
std::size_t first_invalid(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t len = utf8_length(s, i);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

// Copy of `s` with each byte outside well-formed UTF-8 replaced by '!':
// same offsets, and '!' is what a lone surrogate is to the pattern (not
// letter, number, space, nor the apostrophe of a contraction).
std::string with_invalid_as_punctuation(std::string_view s, std::size_t i) {
  std::string out(s);
  while (i < out.size()) {
    const std::size_t len = utf8_length(out, i);
    if (len == 0) out[i] = '!';
    i += len == 0 ? 1 : len;
  }
  return out;
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* md) const { pcre2_match_data_free(md); }
};

}  // namespace

std::string pattern() {
  const std::string letters = "\\p{L}" + std::string(kNewLetters);
  const std::string numbers = "\\p{N}" + std::string(kNewNumbers);
  return "'s|'t|'re|'ve|'m|'ll|'d| ?[" + letters + "]+| ?[" + numbers +
         "]+| ?[^\\p{White_Space}" + letters + numbers +
         "]+|\\p{White_Space}+(?!\\P{White_Space})|\\p{White_Space}+";
}

Pretokenizer::Pretokenizer() {
  int error = 0;
  PCRE2_SIZE offset = 0;
  const std::string text = pattern();
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(text.data()),
                        text.size(),
                        PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &error,
                        &offset, nullptr);
  if (code_ == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw std::logic_error("PCRE2 rejects the GPT-2 pattern at offset " +
                           std::to_string(offset) + ": " +
                           reinterpret_cast<const char*>(message));
  }
  jit_ = pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE) == 0;
}

Pretokenizer::~Pretokenizer() { pcre2_code_free(code_); }

void Pretokenizer::split(std::string_view text,
                         std::vector<std::string_view>& pieces) const {
  std::string sanitized;
  std::string_view subject = text;
  if (const std::size_t bad = first_invalid(text);
      bad != std::string_view::npos) {
    sanitized = with_invalid_as_punctuation(text, bad);
    subject = sanitized;
  }
  const std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
      pcre2_match_data_create_from_pattern(code_, nullptr));
  if (!match) throw std::bad_alloc();
  const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
  std::size_t pos = 0;
  while (pos < subject.size()) {
    // The subject is well-formed UTF-8 by now, so PCRE2 need not check it.
    const int rc =
        jit_ ? pcre2_jit_match(code_, data, subject.size(), pos, 0,
                               match.get(), nullptr)
             : pcre2_match(code_, data, subject.size(), pos,
                           PCRE2_NO_UTF_CHECK, match.get(), nullptr);
    if (rc < 0 || ovector[0] != pos || ovector[1] <= pos) {
      // Every character is a letter, number, space or other, so the pattern
      // matches at every position; failing here is a bug or a PCRE2 limit.
      throw std::logic_error("GPT-2 pattern failed at byte " +
                             std::to_string(pos) + " (PCRE2 code " +
                             std::to_string(rc) + ")");
    }
    pieces.emplace_back(text.data() + pos, ovector[1] - pos);
    pos = ovector[1];
  }
}


}  // namespace gpt2::bpe

namespace gpt2 {
namespace {

// Unicode's White_Space property, which the pattern's \p{White_Space} tests.
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// Whether the character ending at text[p - 1] is white space. A byte that is
// not part of valid UTF-8 is '!' to the pattern (Pretokenizer::split), not
// white space. At most one valid sequence can end at p - 1 (a lead byte is
// never a continuation byte), and the left-to-right decoding of the whole
// text lands on its first byte, so decoding backwards from p agrees with it.
bool ends_in_white_space(std::string_view text, std::size_t p) {
  const auto b = static_cast<unsigned char>(text[p - 1]);
  if (b < 0x80) return is_white_space(b);
  for (std::size_t len = 2; len <= 4 && len <= p; ++len) {
    const std::size_t s = p - len;
    if (bpe::utf8_length(text, s) != len) continue;
    char32_t c = static_cast<unsigned char>(text[s]) & (0xFF >> (len + 1));
    for (std::size_t k = 1; k < len; ++k) c = (c << 6) | (static_cast<unsigned char>(text[s + k]) & 0x3F);
    return is_white_space(c);
  }
  return false;
}

}  // namespace

// Why a cut at p gives the same ids. BPE merges within the pre-tokenizer's
// pieces only, so it is enough that the pieces of the whole are the pieces
// of the two parts. The pattern is matched anchored at the end of the
// previous match, and every character starts some match, so the matches
// tile the text. (1) No match of the whole spans p: a match that holds
// white space is either all white space (the last two alternatives) or
// holds one space at its start ( ?\p{L}+ and the like); text[p] is white
// space and text[p - 1] is not, so no match holds both. (2) The matches
// before p are the same in text[0, p): each alternative reads at most the
// character after its match to stop, and the character at p (white space)
// stops the letter, number and punctuation runs as the end of text does;
// the only look-ahead, (?!\P{White_Space}), follows a white-space run, and
// none ends at p. (3) The matches from p on are those of text[p, end): the
// pattern has no look-behind. Invalid UTF-8 is replaced byte by byte
// before matching, and that replacement is decided the same in the parts,
// as ends_in_white_space says. Tested on tiny Shakespeare and on generated
// text with invalid bytes and Unicode spaces (tests/train/prepare_test.cpp).
std::size_t safe_cut(std::string_view text, std::size_t limit) {
  for (std::size_t p = std::min(limit, text.size() - 1); p >= 1 && p < text.size(); --p) {
    const char c = text[p];
    if ((c == ' ' || c == '\n' || c == '\t' || c == '\r') && !ends_in_white_space(text, p)) return p;
  }
  return 0;
}

}  // namespace gpt2
