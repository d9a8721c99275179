#include "gpt2/io/checkpoint/torch_archive.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "gpt2/error.h"
#include "gpt2/io/checkpoint/archive_records.h"
#include "gpt2/io/detail/mapped_tensor.h"
#include "gpt2/ops/memory.h"

namespace gpt2::detail {
namespace {

using Kind = PValue::Kind;

// a * b, or -1 if either is negative or the product overflows int64.
int64_t mul(int64_t a, int64_t b) {
  int64_t out;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &out)) return -1;
  return out;
}

}  // namespace

void TorchArchive::fail(const std::string& rule) const {
  throw FormatError(fmt::format("'{}' is not a checkpoint archive this library reads: {}", path_,
                                rule));
}

TorchArchive::TorchArchive(std::string_view bytes, const std::string& path, ModelFileBytes file,
                           ArchiveKind kind)
    : path_(path), file_(std::move(file)), zip_(bytes, path) {
  const auto& records = zip_.records();
  if (records.empty()) fail("the zip archive is empty");
  prefix_ = records.front().name.substr(0, records.front().name.find('/') + 1);
  if (prefix_.size() < 2) fail(fmt::format("record '{}' is not in a folder", records.front().name));
  const auto* data = zip_.find(prefix_ + "data.pkl");
  const auto* constants = zip_.find(prefix_ + "constants.pkl");
  const bool saved = data && !constants && !zip_.find(prefix_ + "code/__torch__.py");
  if (saved && kind == ArchiveKind::kTorchScript) {
    throw FormatError(fmt::format(
        "'{}' is a PyTorch pickle archive (Python's torch.save: data.pkl without constants.pkl "
        "or code/), not a gpt2 checkpoint; expected a TorchScript archive written by "
        "gpt2::save_checkpoint. A nanoGPT ckpt.pt is read as a model file (--from nanogpt)",
        path));
  }
  if (kind == ArchiveKind::kTorchSave) {
    if (!saved) fail("it is not a Python torch.save archive (data.pkl without constants.pkl or code/)");
    check_torch_save(*data);
    return;
  }
  if (!data || !constants) fail("it has no data.pkl or no constants.pkl");
  const ReferenceRecords& ref = reference();
  std::map<std::string, std::string> code;  // class -> record name
  int versions = 0;
  for (const auto& r : records) {
    if (r.name.compare(0, prefix_.size(), prefix_) != 0) {
      fail(fmt::format("record '{}' is outside the archive folder '{}'", r.name, prefix_));
    }
    const std::string_view rest = std::string_view(r.name).substr(prefix_.size());
    const auto fixed = [&](const std::string& want) {
      if (zip_.read(r) != want) fail(fmt::format("record '{}' differs from LibTorch's", r.name));
    };
    if (const auto problem = marker_problem(rest, r.size <= 64 ? zip_.read(r) : std::string())) {
      if (r.size > 64) fail(fmt::format("record '{}' holds {} bytes, more than 64", r.name, r.size));
      if (!problem->empty()) fail(fmt::format("record '{}': {}", r.name, *problem));
      if (rest == "version" || rest == ".data/version") ++versions;
    } else if (rest == "constants.pkl") {
      fixed(ref.constants);
    } else if (rest == "data.pkl" || (rest.substr(0, 5) == "data/" && all_digits(rest.substr(5)))) {
    } else if (rest.substr(0, 5) == "code/" && rest.size() > 15 &&
               rest.substr(rest.size() - 10) == ".debug_pkl" &&
               !class_of_code_record(rest.substr(5, rest.size() - 15)).empty()) {
      fixed(ref.debug_pkl);
      if (!zip_.find(r.name.substr(0, r.name.size() - 10))) fail(r.name + " has no code record");
    } else if (rest.substr(0, 5) == "code/" && !class_of_code_record(rest.substr(5)).empty()) {
      const std::string text = zip_.read(r);
      try {
        ArchiveClass c = parse_archive_class(text);
        if (print_archive_class(c) != text) throw std::runtime_error("it is not in LibTorch's form");
        classes_[class_of_code_record(rest.substr(5))] = std::move(c);
      } catch (const std::runtime_error& e) {
        fail(fmt::format("code record '{}': {}", r.name, e.what()));
      }
      if (!zip_.find(r.name + ".debug_pkl")) fail(r.name + " has no .debug_pkl record");
    } else {
      fail(fmt::format("unexpected record '{}'", r.name));
    }
  }
  if (versions != 1) fail(fmt::format("it has {} version records (version, .data/version), not 1", versions));
  root_ = read_pickle(zip_.read(*data), path_, "data.pkl");
  if (root_->kind != Kind::kObject) fail("data.pkl does not hold an archive object");
  check_object(*root_, "the archive");
  for (const auto& [name, c] : classes_) {
    if (!class_uses_[name]) fail(fmt::format("class {} is used by no object", name));
  }
  check_storages_used();
}

void TorchArchive::check_storages_used() {
  for (const auto& r : zip_.records()) {
    const std::string_view rest = std::string_view(r.name).substr(prefix_.size());
    if (rest.substr(0, 5) == "data/" && !storages_.count(std::string(rest.substr(5)))) {
      fail(fmt::format("record '{}' is used by no tensor", r.name));
    }
  }
}

void TorchArchive::check_object(const PValue& object, const std::string& where) {
  const auto c = classes_.find(object.s);
  if (c == classes_.end()) fail(fmt::format("{} is of class {}, which has no code record", where, object.s));
  if (class_uses_[object.s]++) fail(fmt::format("class {} is used twice", object.s));
  const auto& attrs = c->second.attributes;
  if (attrs.size() != object.entries.size()) {
    fail(fmt::format("{} has {} attributes, its class {} declares {}", where, object.entries.size(),
                     object.s, attrs.size()));
  }
  for (size_t i = 0; i < attrs.size(); ++i) {
    const auto& [name, value] = object.entries[i];
    if (name != attrs[i].first) {
      fail(fmt::format("{} attribute {} is '{}', its class declares '{}'", where, i, name,
                       attrs[i].first));
    }
    check_value(*value, attrs[i].second, where + "." + name);
  }
  for (const auto* list : {&c->second.parameters, &c->second.buffers}) {
    for (const auto& p : *list) {
      if (object.get(p)->kind != Kind::kTensor) fail(fmt::format("{}.{} is not a tensor", where, p));
    }
  }
}

void TorchArchive::check_value(const PValue& v, const std::string& type, const std::string& where) {
  const auto expect = [&](bool ok) {
    if (!ok) fail(fmt::format("{} is a {}, its class declares {}", where, v.describe(), type));
  };
  if (type == "Tensor") {
    expect(v.kind == Kind::kTensor);
    check_tensor(*v.tensor, where);
  } else if (type == "int") {
    expect(v.kind == Kind::kInt);
  } else if (type == "float") {
    expect(v.kind == Kind::kFloat);
  } else if (type == "bool") {
    expect(v.kind == Kind::kBool);
  } else if (type == "str") {
    expect(v.kind == Kind::kString);
  } else if (type == "Dict[str, int]" || type == "Dict[str, float]" || type == "Dict[str, str]") {
    expect(v.kind == Kind::kDict && v.type_tag == type);
    const std::string value_type = type.substr(10, type.size() - 11);
    for (const auto& [key, value] : v.entries) check_value(*value, value_type, where + "[" + key + "]");
  } else if (type == "Tuple[float, float]") {
    expect(v.kind == Kind::kTuple && v.items.size() == 2);
    for (const auto& item : v.items) check_value(*item, "float", where);
  } else if (classes_.count(type)) {
    expect(v.kind == Kind::kObject && v.s == type);
    check_object(v, where);
  } else {
    fail(fmt::format("{} has type {}, which this library never writes", where, type));
  }
}

void TorchArchive::check_tensor(const PickledTensor& t, const std::string& where) {
  const ZipRecord* record = zip_.find(prefix_ + "data/" + t.storage_key);
  if (!record) fail(fmt::format("{}: its storage record data/{} is missing", where, t.storage_key));
  const int64_t element = static_cast<int64_t>(c10::elementSize(t.dtype));
  const int64_t bytes = mul(t.storage_numel, element);
  if (record->method != 0 || bytes < 0 || static_cast<uint64_t>(bytes) != record->size) {
    fail(fmt::format("{}: storage data/{} holds {} bytes, not {} {} elements of {} bytes (stored)",
                     where, t.storage_key, record->size, t.storage_numel, c10::toString(t.dtype), element));
  }
  auto [first, fresh] = storages_.emplace(t.storage_key, &t);
  if (!fresh && (first->second->dtype != t.dtype || first->second->storage_numel != t.storage_numel)) {
    fail(fmt::format("{}: storage data/{} is described two ways", where, t.storage_key));
  }
  int64_t numel = 1, last = t.offset;  // highest element index the view touches
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    numel = mul(numel, t.sizes[d]);
    const int64_t reach = mul(t.sizes[d] > 0 ? t.sizes[d] - 1 : 0, t.strides[d]);
    if (numel < 0 || reach < 0 || __builtin_add_overflow(last, reach, &last)) numel = -1;
    if (numel < 0) break;
  }
  if (t.offset < 0 || numel < 0 || (numel > 0 && last >= t.storage_numel)) {
    fail(fmt::format("{}: the view (offset {}, sizes [{}], strides [{}]) does not fit its "
                     "storage of {} elements", where, t.offset, fmt::join(t.sizes, ", "),
                     fmt::join(t.strides, ", "), t.storage_numel));
  }
}

std::vector<std::pair<std::string, const PickledTensor*>> TorchArchive::named_parameters() const {
  std::vector<std::pair<std::string, const PickledTensor*>> out;
  collect(*root_, "", out);
  return out;
}

void TorchArchive::collect(const PValue& object, const std::string& prefix,
                           std::vector<std::pair<std::string, const PickledTensor*>>& out) const {
  const ArchiveClass& c = classes_.at(object.s);
  for (const auto& [name, value] : object.entries) {
    if (value->kind == Kind::kObject) {
      collect(*value, prefix + name + ".", out);
    } else if (std::find(c.parameters.begin(), c.parameters.end(), name) != c.parameters.end()) {
      out.emplace_back(prefix + name, value->tensor.get());
    }
  }
}

const TorchArchive::Storage& TorchArchive::storage(const PickledTensor& t) const {
  auto& storage = loaded_[t.storage_key];
  if (storage.data.defined()) return storage;
  const ZipRecord& record = *zip_.find(prefix_ + "data/" + t.storage_key);
  // check_tensor matched the sizes. Where views are allowed the tensor is
  // the record's own bytes, where they lie stored and aligned.
  if (file_.view) {
    if (const auto bytes = zip_.view(record, &storage.crc_ok, &storage.crc32)) {
      storage.data = tensor_in_file(file_, bytes->data(), {t.storage_numel}, t.dtype);
      if (storage.data.defined()) return storage;
    }
  }
  // Read from the file into the load's block, where a stored record's
  // place is known and aligned, and viewed there.
  if (file_.block && record.method == 0 && record.data_offset != ZipRecord::kUnknown) {
    char* const to = in_block(file_, file_.bytes.data() + record.data_offset);
    storage.data = tensor_in_block(file_, to, {t.storage_numel}, t.dtype);
    if (storage.data.defined()) {
      storage.crc_ok = zip_.read_into(record, to, &storage.crc32, file_.fd);
      return storage;
    }
  }
  // Straight from the record into the tensor.
  storage.data = empty_large({t.storage_numel}, t.dtype);
  storage.crc_ok = zip_.read_into(record, storage.data.data_ptr(), &storage.crc32, file_.fd);
  return storage;
}

std::optional<uint32_t> TorchArchive::bytes_crc32(const PickledTensor& t) const {
  const Storage& s = storage(t);
  const torch::Tensor view = tensor(t);
  if (!s.crc32 || view.storage_offset() != 0 || view.numel() != t.storage_numel ||
      !view.is_contiguous()) {
    return std::nullopt;
  }
  return s.crc32;
}

torch::Tensor TorchArchive::tensor(const PickledTensor& t) const {
  return storage(t).data.as_strided(t.sizes, t.strides, t.offset);
}

}  // namespace gpt2::detail
