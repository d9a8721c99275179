#pragma once
/// GPT-2's pre-tokenizer: the regex that cuts text into the pieces that BPE
/// then merges within (never across).

#include <string>
#include <string_view>
#include <vector>

struct pcre2_real_code_8;  // PCRE2's compiled pattern (pcre2_code_8)

namespace gpt2::bpe {

/// Letters (L) and numbers (N) that Unicode 15.0 to 16.0 added. tiktoken
/// 1.0.22's regex engine (Unicode 16) takes them as \p{L} and \p{N};
/// Debian 12's PCRE2 10.42 (Unicode 14) does not know them yet. Found by
/// Pretokenizer.EveryCodePointIsClassedAsTiktokenClassesIt; L or N as ICU
/// 78 (Node 20) says. Harmless with a PCRE2 that knows them already.
inline constexpr std::string_view kNewLetters =
    R"(\x{1C89}-\x{1C8A}\x{A7CB}-\x{A7CD}\x{A7DA}-\x{A7DC}\x{105C0}-\x{105F3})"
    R"(\x{10D4A}-\x{10D65}\x{10D6F}-\x{10D85}\x{10EC2}-\x{10EC4})"
    R"(\x{1123F}-\x{11240}\x{11380}-\x{11389}\x{1138B}\x{1138E})"
    R"(\x{11390}-\x{113B5}\x{113B7}\x{113D1}\x{113D3}\x{11BC0}-\x{11BE0})"
    R"(\x{11F02}\x{11F04}-\x{11F10}\x{11F12}-\x{11F33}\x{1342F})"
    R"(\x{13441}-\x{13446}\x{13460}-\x{143FA}\x{16100}-\x{1611D})"
    R"(\x{16D40}-\x{16D6C}\x{18CFF}\x{1B132}\x{1B155}\x{1DF25}-\x{1DF2A})"
    R"(\x{1E030}-\x{1E06D}\x{1E4D0}-\x{1E4EB}\x{1E5D0}-\x{1E5ED}\x{1E5F0})"
    R"(\x{2B739}\x{2EBF0}-\x{2EE5D}\x{31350}-\x{323AF})";
/// See kNewLetters.
inline constexpr std::string_view kNewNumbers =
    R"(\x{10D40}-\x{10D49}\x{116D0}-\x{116E3}\x{11BF0}-\x{11BF9})"
    R"(\x{11F50}-\x{11F59}\x{16130}-\x{16139}\x{16D70}-\x{16D79})"
    R"(\x{1CCF0}-\x{1CCF9}\x{1D2C0}-\x{1D2D3}\x{1E4F0}-\x{1E4F9})"
    R"(\x{1E5F1}-\x{1E5FA})";

/// Length of the well-formed UTF-8 sequence at s[i] (no overlong forms, no
/// surrogates, nothing above U+10FFFF), or 0 if none starts there.
std::size_t utf8_length(std::string_view s, std::size_t i);

/// OpenAI's pattern 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
/// ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ as PCRE2 is given it: \s spelled
/// \p{White_Space}, which is what \s means to tiktoken's engine (U+0085 is
/// one, U+180E is not; PCRE2's \s under UCP follows Perl and takes U+180E),
/// and \p{L}, \p{N} widened by kNewLetters, kNewNumbers.
std::string pattern();

/// The pattern compiled once (UTF, UCP, anchored, JIT when available);
/// split() is safe to call from several threads at once.
///
/// Bytes that are not part of valid UTF-8 are split as Python splits text
/// decoded with errors="surrogateescape": each such byte is one character
/// that is neither letter, number nor space (a lone surrogate, category
/// Cs), so it joins runs of punctuation. Every byte string thus splits into
/// pieces whose concatenation is the input, and valid UTF-8 splits exactly
/// as tiktoken splits it.
class Pretokenizer {
 public:
  /// Compiles pattern(); throws std::logic_error if PCRE2 rejects it.
  Pretokenizer();
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  /// Appends the pieces of `text`, in order, to `pieces`: non-empty views
  /// into `text` that together cover it exactly.
  void split(std::string_view text,
             std::vector<std::string_view>& pieces) const;

 private:
  pcre2_real_code_8* code_ = nullptr;
  bool jit_ = false;
};

}  // namespace gpt2::bpe
