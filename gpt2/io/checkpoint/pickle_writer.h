#pragma once
// A writer of the pickles Python's torch.save writes (protocol 2), for
// nanoGPT's ckpt.pt: None, bools, ints, floats, strings, tuples, lists,
// dicts, collections.OrderedDict and tensors as
// torch._utils._rebuild_tensor_v2 over ('storage', torch.XStorage, key,
// 'cpu', numel) persistent ids; the globals torch.load(weights_only=True)
// allows, and the torch.save dialect of the library's reader (pickle.h).
// Containers are written as calls in order: begin, the items (a dict's as
// key, value, key, value), end.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gpt2::detail {

/// Builds a pickle and the storages its tensors name.
class PickleWriter {
 public:
  /// Starts the pickle: PROTO 2.
  PickleWriter();

  /// None.
  void none();
  /// NEWTRUE / NEWFALSE.
  void boolean(bool v);
  /// The shortest of BININT1, BININT2, BININT and LONG1.
  void integer(int64_t v);
  /// BINFLOAT, which torch 1.13's weights_only reader lacks (2.x has it).
  void real(double v);
  /// BINUNICODE (the bytes as given: UTF-8).
  void string(std::string_view s);
  /// A tensor (any device and layout): its storage is written once however
  /// many tensors view it, as the bytes of a CPU copy (detail::host_tensor;
  /// `what` names it in the FileError where its values cannot be read).
  void tensor(const at::Tensor& t, const std::string& what = "a tensor");

  /// A dict: then key, value, ..., end_dict().
  void begin_dict();
  /// collections.OrderedDict(), as a state dict is; ended by end_dict().
  void begin_ordered_dict();
  void end_dict();
  /// A list: then its items, end_list().
  void begin_list();
  void end_list();
  /// A tuple: then its items, end_tuple().
  void begin_tuple();
  void end_tuple();

  /// The pickle, with STOP.
  std::string finish();
  /// The storages by key ("0", "1", ...), contiguous CPU tensors.
  const std::map<std::string, at::Tensor>& storages() const { return storages_; }

 private:
  void global(std::string_view module, std::string_view name);
  std::string out_;
  std::map<const void*, std::string> keys_;  // by StorageImpl
  std::map<std::string, at::Tensor> storages_;
};

}  // namespace gpt2::detail
