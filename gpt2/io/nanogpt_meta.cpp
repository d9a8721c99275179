#include "gpt2/io/nanogpt_meta.h"

#include <fmt/format.h>

#include <map>

#include "gpt2/error.h"
#include "gpt2/file/read_file.h"
#include "gpt2/io/checkpoint/pickle.h"
#include "gpt2/io/checkpoint/pickle_writer.h"

namespace gpt2 {
namespace {

using detail::PValue;
using Kind = PValue::Kind;

constexpr int64_t kMaxIds = 65536;  // train.bin's ids are uint16

// The bytes of one UTF-8 sequence starting with `lead`, or 0 for a byte
// that cannot start one.
std::size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead < 0xE0) return 2;
  if (lead >= 0xE0 && lead < 0xF0) return 3;
  if (lead >= 0xF0 && lead < 0xF5) return 4;
  return 0;
}

bool one_character(const std::string& s) {
  return !s.empty() && utf8_length(static_cast<unsigned char>(s[0])) == s.size();
}

}  // namespace

NanoGPTCharMeta parse_nanogpt_meta(std::string_view bytes, const std::string& name) {
  const PValue::Ptr root = detail::read_pickle(bytes, name, "meta.pkl", detail::PickleDialect::kPlainData);
  const auto fail = [&](const std::string& why) -> void {
    throw FormatError(fmt::format("'{}' is not nanoGPT's meta.pkl of a character vocabulary: {}",
                                  name, why));
  };
  if (root->kind != Kind::kDict) fail(fmt::format("it holds a {}, not a dict", root->describe()));
  const PValue* size = root->get("vocab_size");
  const PValue* itos = root->get("itos");
  if (!size || size->kind != Kind::kInt) {
    fail(fmt::format("vocab_size is {}, expected int", size ? size->describe() : "missing"));
  }
  if (size->i < 1 || size->i > kMaxIds) {
    fail(fmt::format("vocab_size {} is outside [1, {}] (ids are uint16)", size->i, kMaxIds));
  }
  if (!itos || itos->kind != Kind::kDict || (!itos->int_keys && !itos->entries.empty())) {
    fail(fmt::format("itos is {}, expected a dict of int to str",
                     itos ? itos->describe() + (itos->int_keys ? "" : " (str keys)") : "missing"));
  }
  if (static_cast<int64_t>(itos->entries.size()) != size->i) {
    fail(fmt::format("itos holds {} characters, vocab_size says {}", itos->entries.size(), size->i));
  }
  NanoGPTCharMeta meta;
  meta.itos.resize(static_cast<std::size_t>(size->i));
  std::map<std::string, int64_t> ids;
  for (const auto& [key, value] : itos->entries) {
    const int64_t id = std::stoll(key);  // the reader's decimal text of an int key
    if (id < 0 || id >= size->i) fail(fmt::format("itos has id {}, outside [0, {})", id, size->i));
    if (value->kind != Kind::kString || !one_character(value->s)) {
      fail(fmt::format("itos[{}] is {}, expected one character", id,
                       value->kind == Kind::kString ? fmt::format("'{}'", value->s) : value->describe()));
    }
    if (!ids.emplace(value->s, id).second) {
      fail(fmt::format("itos gives '{}' to ids {} and {}", value->s, ids[value->s], id));
    }
    meta.itos[static_cast<std::size_t>(id)] = value->s;
  }
  if (const PValue* stoi = root->get("stoi")) {
    if (stoi->kind != Kind::kDict || stoi->int_keys || stoi->entries.size() != meta.itos.size()) {
      fail(fmt::format("stoi is {} of {} entries, expected a dict of str to int of {}",
                       stoi->describe(), stoi->entries.size(), meta.itos.size()));
    }
    for (const auto& [ch, value] : stoi->entries) {
      const auto it = ids.find(ch);
      if (value->kind != Kind::kInt || it == ids.end() || it->second != value->i) {
        fail(fmt::format("stoi['{}'] is {}, but itos gives '{}' id {}", ch,
                         value->kind == Kind::kInt ? std::to_string(value->i) : value->describe(), ch,
                         it == ids.end() ? std::string("none") : std::to_string(it->second)));
      }
    }
  }
  return meta;
}

NanoGPTCharMeta read_nanogpt_meta(const std::string& path) {
  // 65536 characters of at most 4 bytes, twice, with the pickle's framing.
  return parse_nanogpt_meta(read_file(path, "nanoGPT's meta.pkl", 8u << 20), path);
}

std::string nanogpt_meta_pickle(const std::vector<std::string>& itos) {
  if (itos.empty() || static_cast<int64_t>(itos.size()) > kMaxIds) {
    throw InputError(fmt::format("a meta.pkl holds 1 to {} characters, got {}", kMaxIds, itos.size()));
  }
  detail::PickleWriter w;
  w.begin_dict();
  w.string("vocab_size");
  w.integer(static_cast<int64_t>(itos.size()));
  w.string("itos");
  w.begin_dict();
  for (std::size_t i = 0; i < itos.size(); ++i) {
    w.integer(static_cast<int64_t>(i));
    w.string(itos[i]);
  }
  w.end_dict();
  w.string("stoi");
  w.begin_dict();
  for (std::size_t i = 0; i < itos.size(); ++i) {
    w.string(itos[i]);
    w.integer(static_cast<int64_t>(i));
  }
  w.end_dict();
  w.end_dict();
  return w.finish();
}

}  // namespace gpt2
