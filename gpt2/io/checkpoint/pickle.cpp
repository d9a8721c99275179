#include "gpt2/io/checkpoint/pickle.h"

#include <cstring>

#include "gpt2/io/checkpoint/pickle_reader.h"

namespace gpt2::detail {
namespace pickle_internal {

void Reader::step(char op) {
  switch (op) {
    case '(': marks_.push_back(stack_.size()); break;
    case 'N': scalar(Kind::kNone); break;
    case '\x88': scalar(Kind::kBool)->b = true; break;
    case '\x89': scalar(Kind::kBool)->b = false; break;
    case 'K': { const auto v = static_cast<int64_t>(le(1)); scalar(Kind::kInt)->i = v; break; }
    case 'M': { const auto v = static_cast<int64_t>(le(2)); scalar(Kind::kInt)->i = v; break; }
    case 'J': { const auto v = static_cast<int32_t>(le(4)); scalar(Kind::kInt)->i = v; break; }
    case '\x8a': {
      const auto n = static_cast<int>(le(1));
      if (n > 8) fail(fmt::format("a {}-byte LONG1 (at most 8)", n));
      uint64_t v = n ? le(n) : 0;
      if (n && n < 8 && (v >> (8 * n - 1))) v |= ~uint64_t{0} << (8 * n);  // sign-extend
      scalar(Kind::kInt)->i = static_cast<int64_t>(v);
      break;
    }
    case 'G': {
      const auto s = take(8);
      uint64_t bits = 0;
      for (char c : s) bits = (bits << 8) | static_cast<unsigned char>(c);
      double d;
      std::memcpy(&d, &bits, sizeof d);
      scalar(Kind::kFloat)->f = d;
      break;
    }
    case 'X': { const auto s = take(le(4)); scalar(Kind::kString)->s.assign(s); break; }
    case 'c': { auto module = line(); stack_.push_back(global(module, line())); break; }
    case ')': stack_.push_back(make(Kind::kTuple)); break;
    case 't': stack_.push_back(tuple(pop_to_mark())); break;
    case '\x85': case '\x86': case '\x87': {
      std::vector<Ptr> items(static_cast<size_t>(op - '\x84'));
      for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
      stack_.push_back(tuple(std::move(items)));
      break;
    }
    case ']': stack_.push_back(make(Kind::kList)); break;
    case '}': stack_.push_back(make(Kind::kDict)); break;
    case 'a': case 'e': {
      std::vector<Ptr> items = op == 'e' ? pop_to_mark() : std::vector<Ptr>{pop()};
      Ptr& list = top();
      if (list->kind != Kind::kList || !list->type_tag.empty()) fail("APPEND to a non-list");
      for (auto& item : items) adopt(*list, item), list->items.push_back(std::move(item));
      break;
    }
    case 's': case 'u': {
      std::vector<Ptr> kv;
      if (op == 'u') {
        kv = pop_to_mark();
      } else {
        Ptr value = pop(), key = pop();
        kv = {key, value};
      }
      set_items(top(), kv);
      break;
    }
    case 'q': memo_put(le(1)); break;
    case 'r': memo_put(le(4)); break;
    case 'h': memo_get(le(1)); break;
    case 'j': memo_get(le(4)); break;
    case 'Q': { auto id = pop(); stack_.push_back(storage(id)); break; }
    case 'R': { auto args = pop(); auto callable = pop(); stack_.push_back(reduce(callable, args)); break; }
    case '\x81': {
      auto args = pop(), cls = pop();
      if (cls->kind != Kind::kGlobal || cls->s.rfind("__torch__", 0) != 0 ||
          args->kind != Kind::kTuple || !args->items.empty()) {
        fail("NEWOBJ of something other than an archive class");
      }
      auto obj = make(Kind::kObject);
      obj->s = cls->s.substr(0, cls->s.find(' ')) + ".Module";
      stack_.push_back(obj);
      break;
    }
    case 'b': {
      auto state = pop();
      Ptr& obj = top();
      if (obj->kind != Kind::kObject || obj->b || state->kind != Kind::kDict ||
          !state->type_tag.empty()) {
        fail("BUILD other than an archive object's attribute dict, once");
      }
      obj->b = true;  // built
      for (const auto& [key, value] : state->entries) adopt(*obj, value);
      obj->entries = state->entries;
      break;
    }
    default: fail(fmt::format("opcode 0x{:02x} is not allowed", static_cast<unsigned char>(op)));
  }
}

}  // namespace pickle_internal

const PValue* PValue::get(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return v.get();
  }
  return nullptr;
}

std::string PValue::describe() const {
  switch (kind) {
    case PValue::Kind::kNone: return "None";
    case PValue::Kind::kBool: return "bool";
    case PValue::Kind::kInt: return "int";
    case PValue::Kind::kFloat: return "float";
    case PValue::Kind::kString: return "str";
    case PValue::Kind::kTuple: return "tuple";
    case PValue::Kind::kList: return "list";
    case PValue::Kind::kDict: return "dict";
    case PValue::Kind::kObject: return "object " + s;
    case PValue::Kind::kTensor: return "Tensor";
    default: return "global";
  }
}

PValue::Ptr read_pickle(std::string_view bytes, const std::string& path, const std::string& what) {
  return pickle_internal::Reader(bytes, path, what).run();
}

}  // namespace gpt2::detail
