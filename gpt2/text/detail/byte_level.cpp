#include "gpt2/text/detail/byte_level.h"

#include <array>

namespace gpt2::bpe {
namespace {

// Bytes that GPT-2 lets stand for themselves: '!'..'~', U+00A1..U+00AC and
// U+00AE..U+00FF. Every other byte gets the next code point from U+0100 on.
bool is_self_symbol(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
         (b >= 0xAE && b <= 0xFF);
}

constexpr int kSymbolLimit = 0x100 + 68;  // one past the largest symbol

struct Tables {
  std::array<char32_t, 256> symbol{};
  std::array<int, kSymbolLimit> byte{};  // symbol -> byte, -1 if none
  Tables() {
    byte.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      symbol[b] = is_self_symbol(b) ? static_cast<char32_t>(b) : next++;
      byte[symbol[b]] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

// Decodes one code point of at most two bytes (every symbol is below U+0800)
// at `pos`; returns -1 for anything else.
int decode_small(std::string_view s, std::size_t& pos) {
  const auto c0 = static_cast<unsigned char>(s[pos]);
  if (c0 < 0x80) {
    pos += 1;
    return c0;
  }
  if (c0 < 0xC2 || c0 > 0xDF || pos + 1 >= s.size()) return -1;
  const auto c1 = static_cast<unsigned char>(s[pos + 1]);
  if ((c1 & 0xC0) != 0x80) return -1;
  pos += 2;
  return ((c0 & 0x1F) << 6) | (c1 & 0x3F);
}

}  // namespace

char32_t byte_to_symbol(std::uint8_t b) { return tables().symbol[b]; }

std::optional<std::string> symbols_to_bytes(std::string_view symbols) {
  const Tables& t = tables();
  std::string out;
  out.reserve(symbols.size());
  std::size_t pos = 0;
  while (pos < symbols.size()) {
    const int cp = decode_small(symbols, pos);
    if (cp < 0 || cp >= kSymbolLimit || t.byte[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(t.byte[cp]));
  }
  return out;
}

}  // namespace gpt2::bpe
