#pragma once
// The validating gate in front of LibTorch's archive loader: a TorchScript
// zip archive as torch::serialize::OutputArchive writes it, checked whole
// before anything else reads it. Zip structure (ZipReader, on libzip; the
// CRC-32 of a storage record when its tensor is read); the record set
// (version, constants.pkl, data.pkl, one code/ class per archive level with
// its .debug_pkl, data/N storages, nothing else); each code record exactly
// as LibTorch prints an archive class (parsed, printed again and compared
// byte for byte, attribute types from a short list); data.pkl through the
// restricted pickle reader, every object's attributes matching its class
// in order and type; each tensor's view inside its storage record, whose
// size is numel x element size. Checkpoint tensors are then read from the
// records here, without torch::jit::load; the one archive still handed to
// LibTorch (the optimizer state) passes this gate first.
//
// The same gate reads Python's torch.save archives (nanoGPT's ckpt.pt):
// data.pkl through the pickle reader's torch.save dialect, data/N storage
// records, the version markers, nothing else; every tensor anywhere in the
// pickle checked against its storage record as above.

#include <torch/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpt2/io/checkpoint/archive_class.h"
#include "gpt2/io/checkpoint/pickle.h"
#include "gpt2/io/checkpoint/zip_reader.h"
#include "gpt2/io/detail/mapped_tensor.h"

namespace gpt2::detail {

/// The two kinds of archive the gate reads.
enum class ArchiveKind {
  kTorchScript,  ///< torch::serialize::OutputArchive (gpt2 checkpoints)
  kTorchSave,    ///< Python's torch.save (nanoGPT's ckpt.pt)
};

/// A validated archive over `bytes` (which must outlive it).
class TorchArchive {
 public:
  /// Checks everything listed above; FormatError naming `path` and the rule.
  /// A Python torch.save file gets a message saying so. Where `file` (whose
  /// bytes `bytes` are) allows views, tensor() views its bytes wherever a
  /// storage record lies stored and aligned in it, instead of copying; where
  /// it has the file open, records are read from it.
  /// An archive of the other kind than `kind` is a FormatError saying which it is.
  TorchArchive(std::string_view bytes, const std::string& path, ModelFileBytes file = {},
               ArchiveKind kind = ArchiveKind::kTorchScript);

  /// data.pkl's root object.
  const PValue& root() const { return *root_; }
  /// Every parameter (per the classes' __parameters__), by dotted name
  /// (TorchScript archives).
  std::vector<std::pair<std::string, const PickledTensor*>> named_parameters() const;
  /// The tensor `t` describes, copied out of its record or over the mapped
  /// file's pages (views of one storage share memory, as the writer's tied
  /// tensors did).
  torch::Tensor tensor(const PickledTensor& t) const;
  /// Whether `t`'s storage record fails its zip CRC-32 (the caller names
  /// the tensor; every other record's CRC is checked at construction).
  /// Reads the storage, which tensor() then reuses.
  bool damaged(const PickledTensor& t) const { return !storage(t).crc_ok; }
  /// The CRC-32 of `t`'s bytes as tensor_crc32 takes it, when `t` is its
  /// whole storage record, contiguous, and the read took that record's CRC
  /// (so a caller checking per-tensor CRC-32s need not read them again);
  /// nullopt otherwise.
  std::optional<uint32_t> bytes_crc32(const PickledTensor& t) const;

 private:
  // A storage record read once, with whether it matched its CRC-32.
  struct Storage {
    torch::Tensor data;
    bool crc_ok = false;
    std::optional<uint32_t> crc32;  // of data's bytes, when the read took it
  };

  [[noreturn]] void fail(const std::string& rule) const;
  const Storage& storage(const PickledTensor& t) const;
  void check_object(const PValue& object, const std::string& where);
  void check_value(const PValue& v, const std::string& type, const std::string& where);
  void check_tensor(const PickledTensor& t, const std::string& where);
  void check_torch_save(const ZipRecord& data);  // torch_save_layout.cpp
  void check_tree(const PValue& v, const std::string& where);
  void check_storages_used();
  void collect(const PValue& object, const std::string& prefix,
               std::vector<std::pair<std::string, const PickledTensor*>>& out) const;

  std::string path_;
  ModelFileBytes file_;  // how tensors are made from the bytes
  ZipReader zip_;
  std::string prefix_;  // "archive/"
  std::map<std::string, ArchiveClass> classes_;  // by "__torch__.___torch_mangle_3.Module"
  std::map<std::string, int> class_uses_;
  std::map<std::string, const PickledTensor*> storages_;  // first view of each key
  PValue::Ptr root_;
  mutable std::map<std::string, Storage> loaded_;  // by storage key
};

}  // namespace gpt2::detail
