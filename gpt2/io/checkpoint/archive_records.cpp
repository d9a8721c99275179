#include "gpt2/io/checkpoint/archive_records.h"

#include <caffe2/serialize/versions.h>
#include <fmt/format.h>
#include <torch/serialize/output-archive.h>
#include <torch/version.h>

#include <sstream>

#include "gpt2/io/checkpoint/zip_reader.h"

namespace gpt2::detail {

const ReferenceRecords& reference() {
  static const ReferenceRecords ref = [] {
    torch::serialize::OutputArchive archive;
    archive.write("x", c10::IValue(int64_t{0}));
    std::ostringstream out;
    archive.save_to(out);
    const std::string bytes = out.str();
    ZipReader zip(bytes, "LibTorch's own archive");
    auto read = [&](const char* name) { return zip.read(*zip.find(std::string("archive/") + name)); };
    return ReferenceRecords{read("constants.pkl"), read("code/__torch__.py.debug_pkl")};
  }();
  return ref;
}

bool all_digits(std::string_view s, size_t max_digits) {
  return !s.empty() && s.size() <= max_digits &&
         s.find_first_not_of("0123456789") == std::string_view::npos;
}

std::optional<std::string> marker_problem(std::string_view name, const std::string& bytes) {
  if (name == "version" || name == ".data/version") {
    // "3\n": the file format; an archive of data alone has the oldest one
    // LibTorch writes, and the gate takes no newer one than it reads.
    using caffe2::serialize::kMaxSupportedFileFormatVersion;
    using caffe2::serialize::kMinProducedFileFormatVersion;
    const std::string_view digits = std::string_view(bytes).substr(0, bytes.size() - 1);
    const bool ok = !bytes.empty() && bytes.back() == '\n' && all_digits(digits) && [&] {
      const uint64_t version = std::stoull(std::string(digits));
      return version >= kMinProducedFileFormatVersion && version <= kMaxSupportedFileFormatVersion;
    }();
    if (ok) return "";
    std::string shown = bytes.substr(0, 16);
    if (!shown.empty() && shown.back() == '\n') shown.replace(shown.size() - 1, 1, "\\n");
    return fmt::format("it holds '{}', not a file format from {} to {} and a newline (LibTorch {})",
                       shown, kMinProducedFileFormatVersion, kMaxSupportedFileFormatVersion,
                       TORCH_VERSION);
  }
  if (name == "byteorder") {
    if (bytes == "little") return "";
    return fmt::format("it holds '{}': only little-endian archives are read", bytes);
  }
  if (name == ".data/serialization_id") {
    return all_digits(bytes, 64) ? "" : "it is not a decimal number of at most 64 digits";
  }
  if (name == ".format_version") return bytes == "1" ? "" : fmt::format("it holds '{}', not 1", bytes);
  if (name == ".storage_alignment") {
    return bytes == "64" ? "" : fmt::format("it holds '{}', not 64", bytes);
  }
  return std::nullopt;
}

std::string class_of_code_record(std::string_view file) {
  constexpr std::string_view kMangled = "__torch__/___torch_mangle_";
  if (file == "__torch__.py") return "__torch__.Module";
  if (file.substr(0, kMangled.size()) != kMangled || file.size() < 3 ||
      file.substr(file.size() - 3) != ".py" ||
      !all_digits(file.substr(kMangled.size(), file.size() - kMangled.size() - 3))) {
    return {};
  }
  return fmt::format("__torch__.{}.Module", file.substr(10, file.size() - 13));
}

}  // namespace gpt2::detail
