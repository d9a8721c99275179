#pragma once
// A restricted reader for the pickles TorchScript archives hold (data.pkl,
// constants.pkl), written for hostile bytes. It accepts only what LibTorch's
// jit Pickler emits for a torch::serialize::OutputArchive: protocol 2;
// None, bools, ints (up to 64 bits), floats, strings, tuples, lists and
// dicts with string keys; archive objects (`__torch__[.___torch_mangle_N]
// Module`, NEWOBJ + BUILD); tensors through torch._utils._rebuild_tensor_v2
// over `('storage', torch.XStorage, key, 'cpu', numel)` persistent ids;
// collections.OrderedDict() and torch.jit._pickle.restore_type_tag. Any
// other opcode or global, a memo reference to a container (so no cycles),
// nesting deeper than kMaxDepth, or trailing bytes is a FormatError.
//
// The torch.save dialect reads what Python's torch.save (1.13 and 2.x)
// writes for a dict of state dicts, scalars and containers, as nanoGPT's
// ckpt.pt: the same opcodes and tensors (storages saved from 'cpu',
// 'cuda', 'cuda:N' or 'mps'; the bytes are the same), dicts keyed by str
// or int, collections.OrderedDict() with one BUILD of a state dict's
// `_metadata` (dropped); no archive classes or restore_type_tag. Only
// three globals (torch._utils._rebuild_tensor_v2, torch.XStorage,
// collections.OrderedDict), each called only in the form above: nothing a
// pickle names is ever imported or run.
//
// The plain-data dialect reads what Python's pickle.dump writes for plain
// values, as nanoGPT's prepare.py writes meta.pkl: protocols 2 to 5 (FRAME,
// MEMOIZE, the short and 8-byte string forms), None, bools, ints, floats,
// strings, tuples, lists and dicts keyed by str or int. No global at all,
// no persistent id, no call: it holds data and nothing else.

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpt2::detail {

/// Deepest nesting of values accepted (the writer's is 5 or so per archive level).
constexpr int kMaxPickleDepth = 64;

/// A tensor as a pickle describes it: a view of a storage record.
struct PickledTensor {
  /// The storage's record name under data/ ("0", "1", ...).
  std::string storage_key;
  /// The storage's element type (FloatStorage: float32, ...).
  c10::ScalarType dtype = c10::ScalarType::Float;
  /// Elements in the storage, as its persistent id says.
  int64_t storage_numel = 0;
  /// The view: offset in elements, sizes, strides.
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
  /// The requires_grad flag stored with it.
  bool requires_grad = false;
};

/// Which writer's pickles read_pickle accepts.
enum class PickleDialect {
  kTorchScript,  ///< LibTorch's jit Pickler (TorchScript archives)
  kTorchSave,    ///< Python's torch.save (protocol 2)
  kPlainData,    ///< Python's pickle.dump of plain values (protocols 2-5)
};

/// One value read from a pickle.
struct PValue {
  /// kGlobal and kStorage exist only while parsing: a result never holds one.
  enum class Kind {
    kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kObject, kTensor, kGlobal, kStorage
  };
  using Ptr = std::shared_ptr<PValue>;

  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  /// The string; an object's class ("__torch__.___torch_mangle_3.Module").
  std::string s;
  /// Tuple and list items.
  std::vector<Ptr> items;
  /// Dict entries (string keys) and object attributes, in pickle order.
  std::vector<std::pair<std::string, Ptr>> entries;
  /// For kTensor (and kStorage: key, dtype and numel only).
  std::shared_ptr<const PickledTensor> tensor;
  /// A dict made by collections.OrderedDict().
  bool ordered = false;
  /// A dict whose keys were ints (torch.save dialect), kept as decimal text.
  bool int_keys = false;
  /// restore_type_tag's type string on a dict or list ("Dict[str, int]").
  std::string type_tag;
  /// 1 for a leaf, else 1 + the deepest child.
  int depth = 1;

  /// The attribute or dict entry `key`, or nullptr.
  const PValue* get(std::string_view key) const;
  /// "int", "str", "Dict", "object __torch__.Module", ...: for messages.
  std::string describe() const;
};

/// Parses `bytes`, the pickle record `what` of the file `path` (both name it
/// in errors). Throws FormatError naming the rule broken and its offset.
PValue::Ptr read_pickle(std::string_view bytes, const std::string& path, const std::string& what,
                        PickleDialect dialect = PickleDialect::kTorchScript);

}  // namespace gpt2::detail
