#pragma once
/// GPT-2's vocabulary and merge ranks, loaded from encoder.json and
/// vocab.bpe: every table that encoding and decoding read.

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpt2::bpe {

/// One merge of vocab.bpe: its line's rank (lower merges first) and the id
/// of the token it makes.
struct Merge {
  std::int32_t rank;
  std::int32_t id;
};

/// The key of the adjacent pair (left, right) in Vocab::merges.
inline std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) |
         static_cast<std::uint32_t>(right);
}

/// Tables built once per load. Not copyable: regular_ids views the strings
/// in token_bytes (a move keeps them, as vector moves keep their elements).
struct Vocab {
  Vocab() = default;
  Vocab(const Vocab&) = delete;
  Vocab& operator=(const Vocab&) = delete;
  Vocab(Vocab&&) = default;
  Vocab& operator=(Vocab&&) = default;

  /// id -> the raw bytes of the token (ids are 0..size-1, dense).
  std::vector<std::string> token_bytes;
  /// byte -> id of the single-byte token.
  std::array<std::int32_t, 256> byte_ids{};
  /// Raw bytes -> id, for every token except the special ones.
  std::unordered_map<std::string_view, std::int32_t> regular_ids;
  /// pair_key(left, right) -> the merge of that adjacent pair.
  std::unordered_map<std::uint64_t, Merge> merges;
  /// Tokens that are neither a byte nor a merge (<|endoftext|>): text and id.
  std::vector<std::pair<std::string, std::int32_t>> specials;
  /// Id of <|endoftext|>.
  std::int32_t eot = -1;
};

/// Reads, hash-checks and parses both files. Throws FileError naming the
/// file (and line or key) for anything missing, damaged or inconsistent.
Vocab load_vocab(const std::filesystem::path& encoder_json,
                 const std::filesystem::path& vocab_bpe);

}  // namespace gpt2::bpe
