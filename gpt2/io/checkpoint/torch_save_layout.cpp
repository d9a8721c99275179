// The gate's rules for Python torch.save archives (nanoGPT's ckpt.pt): the
// record set, and every tensor anywhere in data.pkl checked against its
// storage record (torch_archive.cpp has the TorchScript side).
#include <fmt/format.h>

#include "gpt2/io/checkpoint/archive_records.h"
#include "gpt2/io/checkpoint/torch_archive.h"

namespace gpt2::detail {

void TorchArchive::check_torch_save(const ZipRecord& data) {
  int versions = 0;
  for (const auto& r : zip_.records()) {
    if (r.name.compare(0, prefix_.size(), prefix_) != 0) {
      fail(fmt::format("record '{}' is outside the archive folder '{}'", r.name, prefix_));
    }
    const std::string_view rest = std::string_view(r.name).substr(prefix_.size());
    if (const auto problem = marker_problem(rest, r.size <= 64 ? zip_.read(r) : std::string())) {
      if (r.size > 64)
        fail(fmt::format("record '{}' holds {} bytes, more than 64", r.name, r.size));
      if (!problem->empty()) fail(fmt::format("record '{}': {}", r.name, *problem));
      if (rest == "version" || rest == ".data/version") ++versions;
    } else if (rest != "data.pkl" &&
               !(rest.substr(0, 5) == "data/" && all_digits(rest.substr(5)))) {
      fail(
          fmt::format("unexpected record '{}' (a torch.save archive holds data.pkl, data/N and "
                      "version markers)",
                      r.name));
    }
  }
  if (versions != 1)
    fail(fmt::format("it has {} version records (version, .data/version), not 1", versions));
  root_ = read_pickle(zip_.read(data), path_, "data.pkl", PickleDialect::kTorchSave);
  check_tree(*root_, "data.pkl");
  check_storages_used();
}

void TorchArchive::check_tree(const PValue& v, const std::string& where) {
  if (v.kind == PValue::Kind::kTensor) check_tensor(*v.tensor, where);
  for (const auto& item : v.items) check_tree(*item, where + "[]");
  for (const auto& [key, value] : v.entries) check_tree(*value, where + "[" + key + "]");
}

}  // namespace gpt2::detail
