#include "gpt2/io/checkpoint/zip_reader.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <set>
#include <utility>

#include "gpt2/error.h"

namespace gpt2::detail {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50,
                   kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50,
                   kDescriptorSig = 0x08074b50;
constexpr uint16_t kEncrypted = 1, kDescriptor = 8, kUtf8 = 1 << 11;
constexpr uint32_t kSaturated = 0xffffffff;

// Little-endian reads at `at`, which the caller has bounds-checked.
uint64_t le(std::string_view b, uint64_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

[[maybe_unused]] uint32_t crc_of(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (!data.empty()) {  // zlib takes uInt lengths
    const auto n = static_cast<uInt>(std::min<size_t>(data.size(), 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data()), n);
    data.remove_prefix(n);
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

ZipReader::ZipReader(std::string_view bytes, std::string path, bool verify_crcs,
                     uint64_t max_inflated)
    : bytes_(bytes), path_(std::move(path)), max_inflated_(max_inflated) {
  read_directory(verify_crcs);
}

void ZipReader::fail(const std::string& rule) const {
  throw FormatError(fmt::format("'{}' is not a ZIP archive this library reads: {}", path_, rule));
}

void ZipReader::read_directory(bool verify_crcs) {
  const uint64_t n = bytes_.size();
  if (n < 22) fail(fmt::format("{} bytes is too short for an end-of-directory record", n));
  // The end record: 22 bytes, then a comment that must reach the file's end.
  uint64_t end = n - 22;
  const uint64_t lowest = n >= 22 + 0xffff ? n - 22 - 0xffff : 0;
  while (le(bytes_, end, 4) != kEndSig || end + 22 + le(bytes_, end + 20, 2) != n) {
    if (end == lowest) fail("no end-of-central-directory record");
    --end;
  }
  if (le(bytes_, end + 4, 2) != 0 || le(bytes_, end + 6, 2) != 0) fail("multi-disk archive");
  uint64_t count = le(bytes_, end + 10, 2), dir_size = le(bytes_, end + 12, 4);
  uint64_t dir_offset = le(bytes_, end + 16, 4), dir_end_limit = end;
  if (le(bytes_, end + 8, 2) != count) fail("entry counts differ in the end record");
  if (end >= 20 && le(bytes_, end - 20, 4) == kZip64LocatorSig) {
    const uint64_t at = le(bytes_, end - 20 + 8, 8);
    if (at > end - 20 || end - 20 - at < 56 || le(bytes_, at, 4) != kZip64EndSig) {
      fail("the zip64 locator points outside the archive or at no zip64 end record");
    }
    const uint64_t count64 = le(bytes_, at + 32, 8), size64 = le(bytes_, at + 40, 8),
                   offset64 = le(bytes_, at + 48, 8);
    if ((count != 0xffff && count != count64) || (dir_size != kSaturated && dir_size != size64) ||
        (dir_offset != kSaturated && dir_offset != offset64) || le(bytes_, at + 24, 8) != count64) {
      fail("the zip64 end record disagrees with the end record");
    }
    count = count64, dir_size = size64, dir_offset = offset64, dir_end_limit = at;
  }
  if (dir_offset > dir_end_limit || dir_size > dir_end_limit - dir_offset) {
    fail(fmt::format("central directory [{}, +{}) runs past its end record at {}", dir_offset,
                     dir_size, dir_end_limit));
  }
  if (count > dir_size / 46) fail(fmt::format("{} entries cannot fit {} bytes", count, dir_size));
  directory_offset_ = dir_offset;
  std::vector<std::pair<uint64_t, size_t>> by_offset;  // local header offset, record index
  std::set<std::string, std::less<>> names;
  uint64_t at = dir_offset;
  const uint64_t dir_end = dir_offset + dir_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (dir_end - at < 46 || le(bytes_, at, 4) != kCentralSig) {
      fail(fmt::format("central entry {} is truncated or has a bad signature", i));
    }
    const uint16_t flags = static_cast<uint16_t>(le(bytes_, at + 8, 2));
    ZipRecord r;
    r.method = static_cast<uint16_t>(le(bytes_, at + 10, 2));
    r.crc32 = static_cast<uint32_t>(le(bytes_, at + 16, 4));
    r.compressed_size = le(bytes_, at + 20, 4);
    r.size = le(bytes_, at + 24, 4);
    const uint64_t name_len = le(bytes_, at + 28, 2), extra_len = le(bytes_, at + 30, 2),
                   comment_len = le(bytes_, at + 32, 2);
    uint64_t local = le(bytes_, at + 42, 4);
    if (le(bytes_, at + 34, 2) != 0) fail(fmt::format("central entry {} is on another disk", i));
    if (dir_end - at - 46 < name_len + extra_len + comment_len) {
      fail(fmt::format("central entry {} runs past the directory", i));
    }
    r.name.assign(bytes_.substr(at + 46, name_len));
    // zip64: the saturated fields follow, in order, in extra field 0x0001.
    bool zip64 = false;
    for (uint64_t e = at + 46 + name_len, e_end = e + extra_len; e < e_end;) {
      if (e_end - e < 4) fail(fmt::format("record '{}' has a truncated extra field", r.name));
      const uint64_t id = le(bytes_, e, 2), len = le(bytes_, e + 2, 2);
      if (e_end - e - 4 < len) fail(fmt::format("record '{}' has a truncated extra field", r.name));
      if (id == 1) {
        zip64 = true;
        uint64_t f = e + 4;
        for (uint64_t* field : {&r.size, &r.compressed_size, &local}) {
          if (*field != kSaturated) continue;
          if (f + 8 > e + 4 + len) fail(fmt::format("record '{}' has a short zip64 field", r.name));
          *field = le(bytes_, f, 8);
          f += 8;
        }
      }
      e += 4 + len;
    }
    if (flags & kEncrypted) fail(fmt::format("record '{}' is encrypted", r.name));
    if (flags & ~(kDescriptor | kUtf8)) {
      fail(fmt::format("record '{}' has unsupported flags 0x{:x}", r.name, flags));
    }
    if (r.method != 0 && r.method != 8) {
      fail(fmt::format("record '{}' uses compression method {} (only 0 and 8)", r.name, r.method));
    }
    if (r.method == 0 && r.compressed_size != r.size) {
      fail(fmt::format("stored record '{}' has sizes {} and {}", r.name, r.compressed_size, r.size));
    }
    if (r.name.empty() || !names.insert(r.name).second) {
      fail(fmt::format("record name '{}' is empty or repeated", r.name));
    }
    check_record(r, local, flags, zip64);
    by_offset.emplace_back(local, records_.size());
    records_.push_back(std::move(r));
    at += 46 + name_len + extra_len + comment_len;
  }
  if (at != dir_end) fail("the central directory has bytes after its last entry");
  // Records in file order: none may reach into the next one or the directory.
  std::sort(by_offset.begin(), by_offset.end());
  for (size_t i = 0; i < by_offset.size(); ++i) {
    const auto& r = records_[by_offset[i].second];
    const uint64_t limit = i + 1 < by_offset.size() ? by_offset[i + 1].first : directory_offset_;
    if (r.data_offset + r.compressed_size > limit) {
      fail(fmt::format("record '{}' overlaps the next record or the directory", r.name));
    }
  }
  for (const auto& r : records_) {
    if (r.method != 0) inflate(r);  // every deflate stream is checked, CRC or not
    if (verify_crcs && !crc_ok(r)) fail(fmt::format("record '{}' fails its CRC-32", r.name));
  }
}

bool ZipReader::crc_ok(const ZipRecord& r) const {
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  // The fuzz build (only) skips CRCs, so that mutations reach the parsers.
  (void)r;
  return true;
#else
  return (r.method == 0 ? crc_of(stored(r)) : crc_of(inflate(r))) == r.crc32;
#endif
}

void ZipReader::check_record(ZipRecord& r, uint64_t local, uint16_t flags, bool zip64) const {
  if (local > directory_offset_ || directory_offset_ - local < 30 ||
      le(bytes_, local, 4) != kLocalSig) {
    fail(fmt::format("record '{}' has no local header at offset {}", r.name, local));
  }
  const uint64_t name_len = le(bytes_, local + 26, 2), extra_len = le(bytes_, local + 28, 2);
  if (le(bytes_, local + 6, 2) != flags || le(bytes_, local + 8, 2) != r.method ||
      directory_offset_ - local - 30 < name_len + extra_len ||
      bytes_.substr(local + 30, name_len) != r.name) {
    fail(fmt::format("record '{}': its local header disagrees with the directory", r.name));
  }
  r.data_offset = local + 30 + name_len + extra_len;
  if (r.compressed_size > directory_offset_ - r.data_offset) {
    fail(fmt::format("record '{}' ({} bytes at {}) runs past the directory", r.name,
                     r.compressed_size, r.data_offset));
  }
  if (!(flags & kDescriptor)) {
    const uint64_t crc = le(bytes_, local + 14, 4), cs = le(bytes_, local + 18, 4),
                   us = le(bytes_, local + 22, 4);
    if (crc != r.crc32 || (!zip64 && (cs != r.compressed_size || us != r.size))) {
      fail(fmt::format("record '{}': its local sizes or CRC disagree with the directory", r.name));
    }
    return;
  }
  // Data descriptor after the data: signature, CRC, then 4- or 8-byte sizes.
  const uint64_t d = r.data_offset + r.compressed_size;
  const uint64_t room = directory_offset_ - d;
  const bool ok32 = room >= 16 && le(bytes_, d, 4) == kDescriptorSig &&
                    le(bytes_, d + 4, 4) == r.crc32 && le(bytes_, d + 8, 4) == r.compressed_size &&
                    le(bytes_, d + 12, 4) == r.size;
  const bool ok64 = room >= 24 && le(bytes_, d, 4) == kDescriptorSig &&
                    le(bytes_, d + 4, 4) == r.crc32 && le(bytes_, d + 8, 8) == r.compressed_size &&
                    le(bytes_, d + 16, 8) == r.size;
  if (!ok32 && !ok64) fail(fmt::format("record '{}' has a bad data descriptor", r.name));
}

const ZipRecord* ZipReader::find(std::string_view name) const {
  for (const auto& r : records_) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::string_view ZipReader::stored(const ZipRecord& r) const {
  if (r.method != 0) fail(fmt::format("record '{}' is compressed, expected stored", r.name));
  return bytes_.substr(r.data_offset, r.size);
}

std::string ZipReader::read(const ZipRecord& r) const {
  return r.method == 0 ? std::string(stored(r)) : inflate(r);
}

std::string ZipReader::inflate(const ZipRecord& r) const {
  // Deflate cannot expand more than 1032:1; a larger claim is a lie.
  if (r.size > max_inflated_ || r.size / 1032 > r.compressed_size) {
    fail(fmt::format("record '{}' inflates to {} bytes, more than the {} allowed", r.name, r.size,
                     max_inflated_));
  }
  std::string out(r.size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail("zlib cannot start");
  const std::string_view in = bytes_.substr(r.data_offset, r.compressed_size);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(std::min<uint64_t>(in.size(), 0xffffffffu));
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = ::inflate(&z, Z_FINISH);
  const bool whole = rc == Z_STREAM_END && z.total_out == r.size && z.avail_in == 0 &&
                     in.size() <= 0xffffffffu;
  inflateEnd(&z);
  if (!whole) {
    fail(fmt::format("record '{}' is not a deflate stream of {} bytes in {}", r.name, r.size,
                     r.compressed_size));
  }
  return out;
}

}  // namespace gpt2::detail
