#include "gpt2/text/detail/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace gpt2::bpe {
namespace {

// Length of the well-formed UTF-8 sequence at s[i] (Unicode Table 3-7: no
// overlong forms, no surrogates, nothing above U+10FFFF), or 0 if none.
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
