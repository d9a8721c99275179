#pragma once
// The restricted unpickler's machine (see pickle.h for what it accepts):
// the stack, marks and memo, and the checks each opcode's handler makes.
// Internal to pickle.cpp, which holds the opcode switch (Reader::step) and
// the calls each dialect allows (reduce, global, storage, build).

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/io/checkpoint/pickle.h"

namespace gpt2::detail::pickle_internal {

using Kind = PValue::Kind;
using Ptr = PValue::Ptr;

// The storage classes the jit Pickler names, by element type.
inline const std::map<std::string, c10::ScalarType, std::less<>>& storage_types() {
  static const std::map<std::string, c10::ScalarType, std::less<>> types{
      {"FloatStorage", c10::ScalarType::Float},   {"DoubleStorage", c10::ScalarType::Double},
      {"HalfStorage", c10::ScalarType::Half},     {"BFloat16Storage", c10::ScalarType::BFloat16},
      {"LongStorage", c10::ScalarType::Long},     {"IntStorage", c10::ScalarType::Int},
      {"ShortStorage", c10::ScalarType::Short},   {"CharStorage", c10::ScalarType::Char},
      {"ByteStorage", c10::ScalarType::Byte},     {"BoolStorage", c10::ScalarType::Bool}};
  return types;
}

inline bool is_archive_class(std::string_view module, std::string_view name) {
  constexpr std::string_view kMangled = "__torch__.___torch_mangle_";
  if (name != "Module") return false;
  if (module == "__torch__") return true;
  if (module.substr(0, kMangled.size()) != kMangled || module.size() == kMangled.size() ||
      module.size() > kMangled.size() + 9) {
    return false;
  }
  for (char c : module.substr(kMangled.size())) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

inline Ptr make(Kind kind) {
  auto v = std::make_shared<PValue>();
  v->kind = kind;
  return v;
}

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& path, const std::string& what,
         PickleDialect dialect)
      : b_(bytes), path_(path), what_(what), dialect_(dialect) {}

  Ptr run() {
    if (plain()) {
      if (b_.size() < 2 || b_[0] != '\x80' || b_[1] < 2 || b_[1] > 5) {
        fail("it does not start with PROTO 2, 3, 4 or 5");
      }
    } else if (b_.size() < 2 || b_[0] != '\x80' || b_[1] != 2) {
      fail("it does not start with PROTO 2");
    }
    pos_ = 2;
    while (true) {
      if (pos_ >= b_.size()) fail("it ends without STOP");
      op_at_ = pos_;
      const char op = b_[pos_++];
      if (op == '.') break;
      step(op);
    }
    if (pos_ != b_.size()) fail("bytes follow STOP");
    if (stack_.size() != 1 || !marks_.empty()) fail("STOP with a stack other than one value");
    const Ptr& out = stack_[0];
    if (out->kind == Kind::kGlobal || out->kind == Kind::kStorage) fail("the result is not a value");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& rule) const {
    throw FormatError(fmt::format("'{}': {} is not a pickle this library {}: {} (at byte {})",
                                  path_, what_, reads() ? "reads" : "writes", rule, op_at_));
  }
  bool torch_save() const { return dialect_ == PickleDialect::kTorchSave; }
  bool plain() const { return dialect_ == PickleDialect::kPlainData; }
  // The dialects of files other programs write (torch.save, pickle.dump).
  bool reads() const { return dialect_ != PickleDialect::kTorchScript; }
  std::string_view take(uint64_t n) {
    if (n > b_.size() - pos_) fail("an argument runs past the end");
    auto s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t le(int n) {
    auto s = take(n);
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[i]);
    return v;
  }
  std::string line() {
    const auto end = b_.find('\n', pos_);
    if (end == std::string_view::npos || end - pos_ > 256) fail("a GLOBAL name is unterminated");
    std::string s(b_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  Ptr pop() {
    if (stack_.empty() || (!marks_.empty() && marks_.back() == stack_.size())) {
      fail("an opcode needs a value the stack does not have");
    }
    Ptr v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Ptr& top() {
    if (stack_.empty() || (!marks_.empty() && marks_.back() == stack_.size())) {
      fail("an opcode needs a value the stack does not have");
    }
    return stack_.back();
  }
  std::vector<Ptr> pop_to_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    std::vector<Ptr> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  // A value may go into a container: not a global or storage, depth bounded.
  void adopt(PValue& parent, const Ptr& child) {
    if (child->kind == Kind::kGlobal || child->kind == Kind::kStorage ||
        (child->kind == Kind::kTuple && child->b)) {
      fail("a global or storage used as a value");
    }
    parent.depth = std::max(parent.depth, child->depth + 1);
    if (parent.depth > kMaxPickleDepth) fail(fmt::format("nesting deeper than {}", kMaxPickleDepth));
  }
  Ptr tuple(std::vector<Ptr> items) {
    auto t = make(Kind::kTuple);
    for (const auto& item : items) {
      // A storage or global may sit in REDUCE/BINPERSID arguments only (b marks those).
      if (item->kind == Kind::kGlobal || item->kind == Kind::kStorage) t->b = true;
      else adopt(*t, item);
    }
    t->items = std::move(items);
    return t;
  }
  void set_items(const Ptr& dict, const std::vector<Ptr>& kv) {
    if (dict->kind != Kind::kDict || !dict->type_tag.empty() || kv.size() % 2) {
      fail("SETITEMS on a non-dict or odd items");
    }
    auto& keys = dict_keys_[dict];  // keyed by owner: a freed dict's address is not reused
    for (size_t k = 0; k < kv.size(); k += 2) {
      // torch.save's optimizer state is keyed by parameter index (and
      // nanoGPT's meta.pkl maps ids to characters): int keys,
      // held as their decimal text, all of a dict's keys of one kind.
      const bool int_key = kv[k]->kind == Kind::kInt && reads();
      if (kv[k]->kind != Kind::kString && !int_key) fail("a dict key that is not a string");
      if (!dict->entries.empty() && dict->int_keys != int_key) fail("a dict with str and int keys");
      dict->int_keys = int_key;
      const std::string key = int_key ? std::to_string(kv[k]->i) : kv[k]->s;
      if (!keys.insert(key).second) fail(fmt::format("dict key '{}' repeated", key));
      adopt(*dict, kv[k + 1]);
      dict->entries.emplace_back(key, kv[k + 1]);
    }
  }
  Ptr reduce(const Ptr& callable, const Ptr& args);  // pickle_calls.cpp
  Ptr storage(const Ptr& id);
  Ptr global(const std::string& module, const std::string& name);
  void build();
  bool saved_from(const std::string& location) const;  // a persistent id's location
  void memo_get(uint64_t index) {
    if (index >= memo_.size()) fail(fmt::format("memo {} was never put", index));
    const Kind k = memo_[index]->kind;
    if (k == Kind::kDict || k == Kind::kList || k == Kind::kObject) {
      fail("a memo reference to a dict, list or object");  // shared containers could form cycles
    }
    stack_.push_back(memo_[index]);
  }
  void memo_put(uint64_t index) {
    if (index != memo_.size()) fail(fmt::format("memo index {} out of sequence", index));
    memo_.push_back(top());
  }
  Ptr scalar(Kind kind) {
    auto v = make(kind);
    stack_.push_back(v);
    return v;
  }
  void step(char op);

  std::string_view b_;
  const std::string& path_;
  const std::string& what_;
  PickleDialect dialect_;
  uint64_t pos_ = 0, op_at_ = 0;
  std::vector<Ptr> stack_, memo_;
  std::vector<size_t> marks_;
  std::map<Ptr, std::set<std::string>> dict_keys_;
};

}  // namespace gpt2::detail::pickle_internal
