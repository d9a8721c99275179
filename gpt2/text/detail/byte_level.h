#pragma once
/// GPT-2's byte <-> symbol table (bytes_to_unicode in OpenAI's encoder.py).
/// encoder.json and vocab.bpe spell every byte as one printable code point so
/// that no token contains whitespace or control characters; this undoes it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpt2::bpe {

/// The code point that stands for byte `b` in encoder.json and vocab.bpe:
/// printable Latin-1 bytes stand for themselves, the other 68 bytes map to
/// U+0100.. in byte order.
char32_t byte_to_symbol(std::uint8_t b);

/// The raw bytes spelled by `symbols` (UTF-8 text of byte symbols), or
/// nullopt when it is malformed UTF-8 or holds a code point that is not one
/// of the 256 symbols.
std::optional<std::string> symbols_to_bytes(std::string_view symbols);

}  // namespace gpt2::bpe
