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
    // Protocol 4's additions, in the plain-data dialect only.
    case '\x8c': case '\x8d': {  // SHORT_BINUNICODE, BINUNICODE8
      if (!plain()) fail(fmt::format("opcode 0x{:02x} is not allowed", static_cast<unsigned char>(op)));
      const auto s = take(le(op == '\x8c' ? 1 : 8));
      scalar(Kind::kString)->s.assign(s);
      break;
    }
    case '\x94':  // MEMOIZE
      if (!plain()) fail("opcode 0x94 is not allowed");
      memo_put(memo_.size());
      break;
    case '\x95': {  // FRAME: a length the frame's bytes must hold
      if (!plain()) fail("opcode 0x95 is not allowed");
      if (le(8) > b_.size() - pos_) fail("a FRAME runs past the end");
      break;
    }
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
    case 'Q': {
      if (plain()) fail("a persistent id in plain data");
      auto id = pop();
      stack_.push_back(storage(id));
      break;
    }
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
      if (plain()) fail("BUILD in plain data");
      if (torch_save()) {
        build();
        break;
      }
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

Ptr Reader::reduce(const Ptr& callable, const Ptr& args) {
  if (callable->kind != Kind::kGlobal || args->kind != Kind::kTuple) fail("REDUCE of a non-global");
  const auto& a = args->items;
  if (callable->s == "collections OrderedDict" && a.empty()) {
    auto dict = make(Kind::kDict);
    dict->ordered = true;
    return dict;
  }
  if (callable->s == "torch.jit._pickle restore_type_tag" && !torch_save() && a.size() == 2 &&
      (a[0]->kind == Kind::kDict || a[0]->kind == Kind::kList) && a[0]->type_tag.empty() &&
      a[1]->kind == Kind::kString && !a[1]->s.empty()) {
    a[0]->type_tag = a[1]->s;
    return a[0];
  }
  if (callable->s == "torch._utils _rebuild_tensor_v2" && a.size() == 6 &&
      a[0]->kind == Kind::kStorage && a[1]->kind == Kind::kInt && a[2]->kind == Kind::kTuple &&
      a[3]->kind == Kind::kTuple && a[4]->kind == Kind::kBool && a[5]->kind == Kind::kDict &&
      a[5]->entries.empty() && a[2]->items.size() == a[3]->items.size() &&
      a[2]->items.size() <= 8) {
    auto t = std::make_shared<PickledTensor>(*a[0]->tensor);
    t->offset = a[1]->i;
    for (size_t d = 0; d < a[2]->items.size(); ++d) {
      if (a[2]->items[d]->kind != Kind::kInt || a[3]->items[d]->kind != Kind::kInt) {
        fail("a tensor size or stride that is not an int");
      }
      t->sizes.push_back(a[2]->items[d]->i);
      t->strides.push_back(a[3]->items[d]->i);
    }
    t->requires_grad = a[4]->b;
    auto v = make(Kind::kTensor);
    v->tensor = std::move(t);
    return v;
  }
  fail(fmt::format("a call of {} with arguments it does not take", callable->s));
}

Ptr Reader::storage(const Ptr& id) {
  const auto& a = id->items;
  if (id->kind != Kind::kTuple || a.size() != 5 || a[0]->kind != Kind::kString ||
      a[0]->s != "storage" || a[1]->kind != Kind::kGlobal || a[2]->kind != Kind::kString ||
      a[3]->kind != Kind::kString || !saved_from(a[3]->s) || a[4]->kind != Kind::kInt ||
      a[4]->i < 0) {
    fail(fmt::format("a persistent id other than ('storage', torch.XStorage, key, {}, numel)",
                     torch_save() ? "'cpu'|'cuda[:N]'|'mps'" : "'cpu'"));
  }
  const auto type = storage_types().find(a[1]->s.substr(a[1]->s.find(' ') + 1));
  if (a[1]->s.rfind("torch ", 0) != 0 || type == storage_types().end()) {
    fail(fmt::format("storage type {} is not allowed", a[1]->s));
  }
  auto t = std::make_shared<PickledTensor>();
  t->storage_key = a[2]->s;
  t->dtype = type->second;
  t->storage_numel = a[4]->i;
  auto v = make(Kind::kStorage);
  v->tensor = std::move(t);
  return v;
}

Ptr Reader::global(const std::string& module, const std::string& name) {
  if (plain()) fail(fmt::format("global {}.{} in plain data", module, name));
  const bool ok = (!torch_save() && is_archive_class(module, name)) ||
                  (module == "torch._utils" && name == "_rebuild_tensor_v2") ||
                  (module == "collections" && name == "OrderedDict") ||
                  (!torch_save() && module == "torch.jit._pickle" && name == "restore_type_tag") ||
                  (module == "torch" && storage_types().count(name));
  if (!ok) fail(fmt::format("global {}.{} is not allowed", module, name));
  auto v = make(Kind::kGlobal);
  v->s = module + " " + name;
  return v;
}

bool Reader::saved_from(const std::string& location) const {
  if (location == "cpu") return true;
  if (!torch_save()) return false;
  if (location == "cuda" || location == "mps") return true;
  const std::string_view digits =
      std::string_view(location).substr(std::min<size_t>(5, location.size()));
  return location.rfind("cuda:", 0) == 0 && !digits.empty() && digits.size() <= 4 &&
         digits.find_first_not_of("0123456789") == std::string_view::npos;
}

// torch.save dialect: an OrderedDict's BUILD, which Python's pickler
// writes for a state dict's `_metadata` (module versions): dropped.
void Reader::build() {
  auto state = pop();
  Ptr& dict = top();
  if (dict->kind != Kind::kDict || !dict->ordered || dict->b || state->kind != Kind::kDict ||
      state->entries.size() != 1 || state->entries[0].first != "_metadata") {
    fail("BUILD other than a state dict's _metadata, once");
  }
  dict->b = true;  // built
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

PValue::Ptr read_pickle(std::string_view bytes, const std::string& path, const std::string& what,
                        PickleDialect dialect) {
  return pickle_internal::Reader(bytes, path, what, dialect).run();
}

}  // namespace gpt2::detail
