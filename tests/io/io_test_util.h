#pragma once
// Helpers shared by the weight-format tests.

#include <torch/types.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/io/checksum.h"
#include "gpt2/io/checkpoint/zip_reader.h"
#include "gpt2/model/gpt.h"
#include "test_util.h"

namespace gpt2::testing {

/// The whole of `path`.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Writes `bytes` as `path`.
inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// A copy of every parameter by name.
inline std::map<std::string, torch::Tensor> snapshot(const GPTImpl& model) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& item : model.named_parameters()) out[item.key()] = item.value().clone();
  return out;
}

/// Whether every parameter of `model` equals `want`'s bit for bit.
inline bool same_tensors(const GPTImpl& model, const std::map<std::string, torch::Tensor>& want) {
  for (const auto& item : model.named_parameters()) {
    if (!torch::equal(item.value(), want.at(item.key()))) return false;
  }
  return model.named_parameters().size() == want.size();
}

/// The message of the FormatError `f` throws, or "no FormatError: ...".
inline std::string format_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("no FormatError: ") + e.what();
  }
  return "no FormatError";
}

/// Zip records: (name, bytes).
using Records = std::vector<std::pair<std::string, std::string>>;

/// Appends `v` as `n` little-endian bytes.
inline void put_le(std::string& s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

/// One zip record as written: `data` is what the file holds (deflated when
/// `method` is 8); `size` and `crc` describe the uncompressed bytes.
struct ZipEntry {
  std::string name, data;
  uint64_t size = 0;
  uint32_t crc = 0;
  uint16_t method = 0, flags = 0;
  int64_t at = -1;  // >= 0: no local copy written, the central entry points here
};

/// A stored record of `data`.
inline ZipEntry stored_entry(const std::string& name, const std::string& data) {
  auto bytes = torch::empty({static_cast<int64_t>(data.size())}, torch::kUInt8);
  if (!data.empty()) std::memcpy(bytes.data_ptr(), data.data(), data.size());
  return {name, data, data.size(), tensor_crc32(bytes)};
}

/// A zip of `entries` (no data descriptors), then `comment`, written here
/// independently of LibTorch's writer and of libzip. A size of 4 GiB or more
/// goes in a zip64 extra field.
inline std::string zip_with(const std::vector<ZipEntry>& entries, const std::string& comment = "") {
  std::string out, dir;
  for (const auto& e : entries) {
    const size_t offset = e.at >= 0 ? static_cast<size_t>(e.at) : out.size();
    const bool zip64 = e.size >= 0xffffffff;
    for (std::string* s : {&out, &dir}) {
      if (s == &out && e.at >= 0) continue;
      put_le(*s, s == &out ? 0x04034b50 : 0x02014b50, 4);
      const int version = zip64 ? 45 : 20;
      if (s == &dir) put_le(*s, version, 2);  // made by
      put_le(*s, version, 2), put_le(*s, e.flags, 2), put_le(*s, e.method, 2), put_le(*s, 0, 4);
      put_le(*s, e.crc, 4);
      put_le(*s, zip64 ? 0xffffffff : e.data.size(), 4), put_le(*s, zip64 ? 0xffffffff : e.size, 4);
      put_le(*s, e.name.size(), 2), put_le(*s, zip64 ? 20 : 0, 2);  // name, extra
      if (s == &dir) {  // comment, disk, attributes, local header offset
        put_le(*s, 0, 2), put_le(*s, 0, 2), put_le(*s, 0, 2), put_le(*s, 0, 4);
        put_le(*s, offset, 4);
      }
      *s += e.name;
      if (zip64) {  // extra field 1: the two sizes
        put_le(*s, 1, 2), put_le(*s, 16, 2), put_le(*s, e.size, 8), put_le(*s, e.data.size(), 8);
      }
    }
    if (e.at < 0) out += e.data;
  }
  const size_t dir_offset = out.size();
  out += dir;
  put_le(out, 0x06054b50, 4), put_le(out, 0, 4), put_le(out, entries.size(), 2);
  put_le(out, entries.size(), 2), put_le(out, dir.size(), 4), put_le(out, dir_offset, 4);
  put_le(out, comment.size(), 2);
  return out + comment;
}

/// A plain zip of `records` (stored, no data descriptors).
inline std::string zip_of(const Records& records) {
  std::vector<ZipEntry> entries;
  for (const auto& [name, data] : records) entries.push_back(stored_entry(name, data));
  return zip_with(entries);
}

/// The records of the zip `bytes` (read with the library's checked reader).
inline Records records_of(const std::string& bytes) {
  Records out;
  const detail::ZipReader zip(bytes, "records_of");
  for (const auto& r : zip.records()) out.emplace_back(r.name, zip.read(r));
  return out;
}

}  // namespace gpt2::testing
