#pragma once
// A strict reader of the zip archives LibTorch's PyTorchStreamWriter (miniz)
// writes, for bytes nobody vouches for. Everything is checked against the
// buffer before it is used: the end-of-central-directory record (zip64
// included), every central entry, its local header and data descriptor, no
// two records overlapping, methods stored or deflate, and each record's
// CRC-32. LibTorch's own reader (miniz through PyTorchStreamReader) leaked
// and crashed on fuzzed archives, so checkpoint bytes pass this first.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpt2::detail {

/// One record of a zip archive, as its central directory describes it.
struct ZipRecord {
  /// Full name inside the archive ("archive/data.pkl").
  std::string name;
  /// Offset of the record's (possibly compressed) bytes in the archive.
  uint64_t data_offset = 0;
  /// Stored and uncompressed sizes in bytes.
  uint64_t compressed_size = 0, size = 0;
  /// 0 stored, 8 deflate.
  uint16_t method = 0;
  /// CRC-32 of the uncompressed bytes.
  uint32_t crc32 = 0;
};

/// A zip archive over `bytes` (which must outlive it), checked whole at
/// construction. Errors are FormatError naming `path` and the rule broken.
class ZipReader {
 public:
  /// Validates the archive; `max_inflated` bounds each deflated record.
  /// With `verify_crcs` false a CRC mismatch is left to the caller (crc_ok),
  /// who can name what the damaged record holds.
  ZipReader(std::string_view bytes, std::string path, bool verify_crcs = true,
            uint64_t max_inflated = 64ull << 20);

  /// The records in central-directory order.
  const std::vector<ZipRecord>& records() const { return records_; }
  /// The record called `name`, or nullptr.
  const ZipRecord* find(std::string_view name) const;
  /// A stored record's bytes, in place. Throws for a deflated one.
  std::string_view stored(const ZipRecord& record) const;
  /// A record's uncompressed bytes.
  std::string read(const ZipRecord& record) const;
  /// Whether the record's bytes match its CRC-32.
  bool crc_ok(const ZipRecord& record) const;

 private:
  [[noreturn]] void fail(const std::string& rule) const;
  void read_directory(bool verify_crcs);
  // Checks the local header (and descriptor) at `local_offset`; sets data_offset.
  void check_record(ZipRecord& record, uint64_t local_offset, uint16_t flags, bool zip64) const;
  std::string inflate(const ZipRecord& record) const;

  std::string_view bytes_;
  std::string path_;
  uint64_t max_inflated_;
  uint64_t directory_offset_ = 0;
  std::vector<ZipRecord> records_;
};

}  // namespace gpt2::detail
