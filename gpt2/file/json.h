#pragma once
// JSON from a file, parsed one way for every reader (safetensors headers,
// config.json, meta.json, encoder.json): nesting bounded, a key repeated in
// an object refused, and nlohmann's message cut to what a person can act
// on. Internal to the library (not installed): it exposes nlohmann-json.

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace gpt2::detail {

/// Deepest nesting of arrays and objects a file may use; GPT-2's files
/// nest 2 or 3 levels.
inline constexpr int kMaxJsonDepth = 32;

/// Parses `text`. Throws FormatError `<what> <reason>`, with reason "is
/// not valid JSON: syntax error ... at line 1, column 17", "nests arrays and
/// objects deeper than 32 levels" or "has the key 'x' twice in one object".
nlohmann::json parse_json(std::string_view text, const std::string& what);

}  // namespace gpt2::detail
