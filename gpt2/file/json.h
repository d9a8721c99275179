#pragma once
// JSON from a file, parsed one way for every reader (safetensors headers,
// config.json, meta.json, encoder.json): nesting bounded, a key repeated in
// an object refused, and nlohmann's message cut to what a person can act
// on. Internal to the library (not installed): it exposes nlohmann-json.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpt2::detail {

/// Deepest nesting of arrays and objects a file may use; GPT-2's files
/// nest 2 or 3 levels.
inline constexpr int kMaxJsonDepth = 32;

/// Parses `text`. Throws FormatError `<what> <reason>`, with reason "is
/// not valid JSON: syntax error ... at line 1, column 17", "nests arrays and
/// objects deeper than 32 levels" or "has the key 'x' twice in one object".
nlohmann::json parse_json(std::string_view text, const std::string& what);

/// The members of a flat JSON object whose values are all integers, in the
/// file's order, read in one pass that builds no tree (encoder.json's
/// 50,257 entries: a third of the tokenizer's load went into the tree).
/// Nesting cannot arise (a member that is an object or array is refused);
/// repeated keys are returned as they come, for the caller to judge.
/// Throws FormatError `<what> is not valid JSON: ...`, `<what> is not a JSON
/// object` or `<what> is not an object of integers: 'key' holds a string`.
std::vector<std::pair<std::string, int64_t>> parse_json_integers(std::string_view text,
                                                                 const std::string& what);

}  // namespace gpt2::detail
