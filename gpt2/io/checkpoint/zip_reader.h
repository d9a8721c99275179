#pragma once
// The zip layer of the checkpoint gate, on libzip (Debian's libzip 1.7),
// for bytes nobody vouches for. libzip opens the archive with ZIP_CHECKCONS:
// the end record (zip64 included) right after the central directory and at
// the end of the file, every central entry parsed, its local header equal to
// it, no record past the directory, no repeated name; reading checks each
// record's size and CRC-32. On top of libzip's view this reader adds what the
// gate needs from the zip layer: no archive comment (so the end record is the
// file's last 22 bytes, the one miniz also takes: the optimizer state still
// reaches LibTorch), stored or deflate only, no encryption, stored sizes that
// agree, at most 65,535 records, records that fit the file without overlap
// (headers and data together no larger than it, so what a load allocates is
// bounded by the file), and a bound on each deflated record. LibTorch's own
// reader (miniz through PyTorchStreamReader) leaked and crashed on fuzzed
// archives, so checkpoint bytes pass this first.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct zip;  // libzip's zip_t

namespace gpt2::detail {

/// One record of a zip archive, as its central directory describes it.
struct ZipRecord {
  /// Full name inside the archive ("archive/data.pkl").
  std::string name;
  /// libzip's index of the record (central-directory order).
  uint64_t index = 0;
  /// Stored and uncompressed sizes in bytes.
  uint64_t compressed_size = 0, size = 0;
  /// 0 stored, 8 deflate.
  uint16_t method = 0;
  /// CRC-32 of the uncompressed bytes.
  uint32_t crc32 = 0;
  /// Where its data begins in the archive's bytes, or kUnknown (then reads
  /// go through libzip).
  uint64_t data_offset = kUnknown;
  static constexpr uint64_t kUnknown = ~uint64_t{0};
};

/// A zip archive over `bytes` (which must outlive it), its directory checked
/// at construction and each record when it is read. Errors are FormatError
/// naming `path` and the rule broken. Not for concurrent reads (libzip's
/// zip_t is not).
class ZipReader {
 public:
  /// Opens and checks the directory; `max_inflated` bounds each deflated record.
  ZipReader(std::string_view bytes, std::string path, uint64_t max_inflated = 64ull << 20);

  /// The records in central-directory order.
  const std::vector<ZipRecord>& records() const { return records_; }
  /// The record called `name`, or nullptr.
  const ZipRecord* find(std::string_view name) const;
  /// A record's uncompressed bytes; throws if they fail its CRC-32.
  std::string read(const ZipRecord& record) const;
  /// Writes the record's `record.size` uncompressed bytes to `out` (which
  /// the caller allocates: a stored record's size lies inside the file, a
  /// deflated one's is bounded by `max_inflated`) and says
  /// whether they match its CRC-32, so that the caller can name what a
  /// damaged record holds. Stored records go straight from the archive to
  /// `out`: one copy, as a view into the archive plus a memcpy would be.
  /// `bytes_crc`, when given, receives the CRC-32 of the bytes written where
  /// the read knows it (taken during the copy for a stored record; the
  /// directory's once libzip verified it for a deflated one), so that a
  /// caller need not take it again.
  /// With `fd` open on the archive's file, a stored record is read from it
  /// (pread on the kernel threads), with no page fault on the file's side.
  bool read_into(const ZipRecord& record, void* out,
                 std::optional<uint32_t>* bytes_crc = nullptr, int fd = -1) const;
  /// A stored record's bytes where they lie in the archive, not copied, with
  /// whether they match its CRC-32 in `crc_ok` (taken here, on the kernel
  /// threads, and given in `bytes_crc` as read_into gives it); nullopt for a
  /// deflated record or one whose place only libzip knows (read_into those).
  std::optional<std::string_view> view(const ZipRecord& record, bool* crc_ok,
                                       std::optional<uint32_t>* bytes_crc = nullptr) const;

 private:
  struct Close {
    void operator()(zip* archive) const;
  };

  [[noreturn]] void fail(const std::string& rule) const;
  void check_records();
  void check_inflated_size(const ZipRecord& record) const;

  std::string path_;
  std::string_view bytes_;
  uint64_t size_;  // of the archive, in bytes
  uint64_t max_inflated_;
  std::unique_ptr<zip, Close> zip_;
  std::vector<ZipRecord> records_;
};

}  // namespace gpt2::detail
