#include "gpt2/io/checkpoint/zip_offsets.h"

#include <optional>

namespace gpt2::detail {
namespace {

// Little-endian fields of `bytes`, nullopt past its end.
struct Fields {
  std::string_view bytes;

  std::optional<uint64_t> read(uint64_t at, int width) const {
    if (at > bytes.size() || bytes.size() - at < static_cast<uint64_t>(width)) return std::nullopt;
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
  }
  bool is(uint64_t at, uint32_t signature) const { return read(at, 4) == signature; }
};

constexpr uint32_t kEnd = 0x06054b50, kEnd64 = 0x06064b50, kLocator64 = 0x07064b50;
constexpr uint32_t kCentral = 0x02014b50, kLocal = 0x04034b50;

// The central directory's offset: from the end record (the file's last 22
// bytes: the gate allows no archive comment) or its zip64 record.
std::optional<uint64_t> directory_offset(const Fields& f) {
  if (f.bytes.size() < 22 || !f.is(f.bytes.size() - 22, kEnd)) return std::nullopt;
  const uint64_t end = f.bytes.size() - 22;
  const auto offset = f.read(end + 16, 4);
  if (offset != 0xffffffffu) return offset;
  if (end < 20 || !f.is(end - 20, kLocator64)) return std::nullopt;
  const auto end64 = f.read(end - 20 + 8, 8);
  if (!end64 || !f.is(*end64, kEnd64)) return std::nullopt;
  return f.read(*end64 + 48, 8);
}

// A central entry's local-header offset, from its zip64 extra field when
// the 32-bit field says so (its values come in a fixed order, each only
// when the 32-bit field is all ones).
std::optional<uint64_t> local_offset(const Fields& f, uint64_t entry, uint64_t extra,
                                     uint64_t extra_len) {
  const auto local = f.read(entry + 42, 4);
  if (local != 0xffffffffu) return local;
  for (uint64_t at = extra; at + 4 <= extra + extra_len;) {
    const auto id = f.read(at, 2), len = f.read(at + 2, 2);
    if (!id || !len) return std::nullopt;
    if (*id == 1) {
      uint64_t field = at + 4;
      if (f.read(entry + 24, 4) == 0xffffffffu) field += 8;  // uncompressed size
      if (f.read(entry + 20, 4) == 0xffffffffu) field += 8;  // compressed size
      if (field + 8 > at + 4 + *len) return std::nullopt;
      return f.read(field, 8);
    }
    at += 4 + *len;
  }
  return std::nullopt;
}

}  // namespace

std::vector<uint64_t> zip_data_offsets(std::string_view bytes,
                                       const std::vector<ZipRecord>& records) {
  const Fields f{bytes};
  auto at = directory_offset(f);
  if (!at) return {};
  std::vector<uint64_t> out;
  for (const ZipRecord& r : records) {
    const uint64_t entry = *at;
    const auto name_len = f.read(entry + 28, 2), extra_len = f.read(entry + 30, 2),
               comment_len = f.read(entry + 32, 2);
    if (!f.is(entry, kCentral) || !name_len || !extra_len || !comment_len) return {};
    if (entry + 46 + *name_len > bytes.size() ||
        bytes.substr(entry + 46, *name_len) != r.name) {
      return {};
    }
    const auto local = local_offset(f, entry, entry + 46 + *name_len, *extra_len);
    if (!local || !f.is(*local, kLocal)) return {};
    const auto local_name = f.read(*local + 26, 2), local_extra = f.read(*local + 28, 2);
    if (!local_name || !local_extra) return {};
    const uint64_t data = *local + 30 + *local_name + *local_extra;
    if (data > bytes.size() || bytes.size() - data < r.compressed_size) return {};
    out.push_back(data);
    at = entry + 46 + *name_len + *extra_len + *comment_len;
  }
  return out;
}

}  // namespace gpt2::detail
