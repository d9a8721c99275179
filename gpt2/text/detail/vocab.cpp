#include "gpt2/text/detail/vocab.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "gpt2/error.h"
#include "gpt2/file/json.h"
#include "gpt2/text/detail/bpe_files.h"
#include "gpt2/text/detail/byte_level.h"

namespace gpt2::bpe {
namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";

using IdMap = std::unordered_map<std::string_view, std::int32_t>;

// Fills token_bytes and `ids` (raw bytes -> id over all tokens, specials
// too) from encoder.json: {"<byte symbols>": id, ...} with dense ids.
void parse_encoder(const std::string& text, const std::string& where,
                   Vocab& vocab, IdMap& ids) {
  const auto members = detail::parse_json_integers(text, where);
  const auto n = static_cast<std::int64_t>(members.size());
  vocab.token_bytes.assign(members.size(), std::string());
  std::vector<bool> seen(members.size(), false);
  for (const auto& [key, value] : members) {
    if (value < 0 || value >= n) {
      throw FileError(where + ": token \"" + key + "\" has id " + std::to_string(value) +
                      ", not an integer in [0, " + std::to_string(n) + ")");
    }
    const auto id = static_cast<std::int32_t>(value);
    if (seen[id]) {
      throw FileError(where + ": id " + std::to_string(id) +
                      " is given to two tokens, one of them \"" + key + "\"");
    }
    auto bytes = symbols_to_bytes(key);
    if (!bytes) {
      throw FileError(where + ": token \"" + key + "\" (id " +
                      std::to_string(id) + ") is not spelled in byte symbols");
    }
    seen[id] = true;
    vocab.token_bytes[id] = std::move(*bytes);
  }
  ids.reserve(members.size());
  for (std::int32_t id = 0; id < n; ++id) {
    const std::string& bytes = vocab.token_bytes[id];
    const auto [it, added] = ids.emplace(bytes, id);
    if (!added) {
      throw FileError(where + ": tokens " + std::to_string(it->second) +
                      " and " + std::to_string(id) + " are the same bytes");
    }
  }
}

std::int32_t id_of(const IdMap& ids, std::string_view bytes) {
  const auto it = ids.find(bytes);
  return it == ids.end() ? -1 : it->second;
}

// Fills merges from vocab.bpe: a "#version" line, then one "left right"
// pair of byte-symbol strings per line, highest priority first.
void parse_merges(const std::string& text, const std::string& where,
                  const IdMap& ids, Vocab& vocab,
                  std::vector<bool>& regular) {
  std::size_t pos = 0;
  std::int32_t rank = 0;
  vocab.merges.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')));
  for (std::size_t line_no = 1; pos < text.size(); ++line_no) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) {
      continue;
    }
    // Built only for an error: 50,000 of them cost a tenth of the load.
    const auto at = [&] {
      return where + " line " + std::to_string(line_no) + " \"" + std::string(line) + "\"";
    };
    const std::size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos ||
        space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      throw FileError(at() + " is not two tokens separated by one space");
    }
    const auto left = symbols_to_bytes(line.substr(0, space));
    const auto right = symbols_to_bytes(line.substr(space + 1));
    if (!left || !right) throw FileError(at() + " is not in byte symbols");
    const std::int32_t l = id_of(ids, *left);
    const std::int32_t r = id_of(ids, *right);
    const std::int32_t m = id_of(ids, *left + *right);
    if (l < 0 || r < 0 || m < 0) {
      throw FileError(at() + " names a token that encoder.json lacks");
    }
    if (!vocab.merges.emplace(pair_key(l, r), Merge{rank, m}).second) {
      throw FileError(at() + " repeats an earlier merge");
    }
    regular[m] = true;
    ++rank;
  }
}

}  // namespace

Vocab load_vocab(const std::filesystem::path& encoder_json,
                 const std::filesystem::path& vocab_bpe) {
  const std::string json_text =
      read_checked(encoder_json, kEncoderJsonName, kEncoderJsonSha256);
  const std::string merges_text =
      read_checked(vocab_bpe, kVocabBpeName, kVocabBpeSha256);
  const std::string json_where = "GPT-2 BPE file " + encoder_json.string();

  Vocab vocab;
  IdMap ids;
  parse_encoder(json_text, json_where, vocab, ids);
  std::vector<bool> regular(vocab.token_bytes.size(), false);
  for (int b = 0; b < 256; ++b) {
    const char byte = static_cast<char>(b);
    const std::int32_t id = id_of(ids, std::string_view(&byte, 1));
    if (id < 0) {
      throw FileError(json_where + " has no token for byte " +
                      std::to_string(b));
    }
    vocab.byte_ids[b] = id;
    regular[id] = true;
  }
  parse_merges(merges_text, "GPT-2 BPE file " + vocab_bpe.string(), ids,
               vocab, regular);

  vocab.regular_ids.reserve(ids.size());
  for (const auto& [bytes, id] : ids) {
    if (regular[id]) {
      vocab.regular_ids.emplace(bytes, id);
    } else {
      vocab.specials.emplace_back(std::string(bytes), id);
      if (bytes == kEndOfText) vocab.eot = id;
    }
  }
  std::sort(vocab.specials.begin(), vocab.specials.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  if (vocab.eot < 0) {
    throw FileError(json_where + " has no special token " +
                    std::string(kEndOfText));
  }
  return vocab;
}

}  // namespace gpt2::bpe
