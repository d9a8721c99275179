#include "gpt2/io/checkpoint/zip_reader.h"

#include <fmt/format.h>
#include <zip.h>

#include <algorithm>
#include <cstring>

#include <set>
#include <utility>

#include "gpt2/error.h"
#include "gpt2/file/read_file.h"
#include "gpt2/io/checkpoint/zip_offsets.h"
#include "gpt2/io/detail/on_threads.h"

namespace gpt2::detail {
namespace {

#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
// The fuzz build (only) skips CRCs, so that mutations reach the parsers.
constexpr bool kCheckCrc = false;
#else
constexpr bool kCheckCrc = true;
#endif

// A zip_error_t that is always finalized.
struct Error {
  zip_error_t e;
  Error() { zip_error_init(&e); }
  ~Error() { zip_error_fini(&e); }
  Error(const Error&) = delete;
  Error& operator=(const Error&) = delete;
  int code() { return zip_error_code_zip(&e); }
  std::string what() { return zip_error_strerror(&e); }
};

struct CloseFile {
  void operator()(zip_file_t* file) const { zip_fclose(file); }
};

// The archive over `bytes`, or null with `error` set. libzip owns the source
// once the archive is open; before that it is ours to free.
zip_t* open_archive(std::string_view bytes, int flags, Error& error) {
  zip_source_t* source = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error.e);
  if (!source) return nullptr;
  zip_t* archive = zip_open_from_source(source, flags, &error.e);
  if (!archive) zip_source_free(source);
  return archive;
}

// The first name that two records share, found without ZIP_CHECKCONS (which
// refuses the archive without saying which); empty if that cannot tell.
std::string repeated_name(std::string_view bytes) {
  Error error;
  const std::unique_ptr<zip_t, decltype(&zip_discard)> lax(open_archive(bytes, ZIP_RDONLY, error),
                                                           zip_discard);
  if (!lax) return {};
  std::set<std::string, std::less<>> names;
  for (zip_int64_t i = 0, n = zip_get_num_entries(lax.get(), 0); i < n; ++i) {
    const char* name = zip_get_name(lax.get(), static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
    if (name && !names.emplace(name).second) return name;
  }
  return {};
}

// What libzip's refusal to open an archive means, for the message.
std::string open_rule(int code, std::string_view bytes) {
  switch (code) {
    case ZIP_ER_NOZIP:
#ifdef ZIP_ER_TRUNCATED_ZIP  // libzip 1.10: a directory that does not fit the file
    case ZIP_ER_TRUNCATED_ZIP:
#endif
      return "no end-of-central-directory record whose central directory and local headers fit "
             "the file";
    case ZIP_ER_INCONS:
      return "its end records, central directory and local headers disagree";
    case ZIP_ER_MULTIDISK:
      return "multi-disk archive";
    case ZIP_ER_EXISTS: {
      const std::string name = repeated_name(bytes);
      return name.empty() ? "two records have the same name"
                          : fmt::format("record name '{}' is repeated", name);
    }
    case ZIP_ER_SEEK:
    case ZIP_ER_EOF:
    case ZIP_ER_READ:
      return "an offset or size in its directory points outside the file";
    default:
      return "libzip cannot open it";
  }
}

uint64_t saturating_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

}  // namespace

void ZipReader::Close::operator()(zip* archive) const { zip_discard(archive); }

ZipReader::ZipReader(std::string_view bytes, std::string path, uint64_t max_inflated)
    : path_(std::move(path)), bytes_(bytes), size_(bytes.size()), max_inflated_(max_inflated) {
  if (size_ < 22)
    fail(fmt::format("{} bytes is too short for an end-of-central-directory record", size_));
  Error error;
  zip_.reset(open_archive(bytes, ZIP_RDONLY | ZIP_CHECKCONS, error));
  if (!zip_) {
    // LibTorch writes no archive comment, so the end record is the file's
    // last 22 bytes; where libzip refuses, that is checked first, then this
    // reader's own rules on the archive opened without libzip's consistency
    // checks (they name the record, and libzip releases word their refusals
    // differently), then libzip's refusal.
    if (bytes.substr(size_ - 22, 4) != std::string_view("PK\x05\x06", 4)) {
      fail("no end-of-central-directory record in its last 22 bytes (LibTorch writes no archive "
           "comment)");
    }
    Error lax_error;
    zip_.reset(open_archive(bytes, ZIP_RDONLY, lax_error));
    if (zip_) check_records();
    records_.clear();
    fail(fmt::format("{} (libzip: {})", open_rule(error.code(), bytes), error.what()));
  }
  check_records();
  // libzip has checked the directory and the local headers; where the data
  // lies is read from them here (zip_offsets.h), or left unknown.
  const auto offsets = zip_data_offsets(bytes, records_);
  for (size_t i = 0; i < offsets.size(); ++i) records_[i].data_offset = offsets[i];
}

void ZipReader::fail(const std::string& rule) const {
  throw FormatError(fmt::format("'{}' is not a ZIP archive this library reads: {}", path_, rule));
}

void ZipReader::check_records() {
  int comment = 0;
  zip_get_archive_comment(zip_.get(), &comment, ZIP_FL_ENC_RAW);
  if (comment != 0) {
    fail(
        fmt::format("it has a {}-byte archive comment (LibTorch writes none), so its end record "
                    "is not the file's last 22 bytes",
                    comment));
  }
  const zip_int64_t count = zip_get_num_entries(zip_.get(), 0);
  if (count > 0xffff) fail(fmt::format("{} records, more than 65,535", count));
  constexpr zip_uint64_t kNeeded = ZIP_STAT_NAME | ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE |
                                   ZIP_STAT_COMP_METHOD | ZIP_STAT_CRC | ZIP_STAT_ENCRYPTION_METHOD;
  uint64_t claimed = 22;  // the end record, then each record's headers and data
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(zip_.get(), static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW, &st) != 0 ||
        (st.valid & kNeeded) != kNeeded) {
      fail(fmt::format("libzip cannot describe record {}", i));
    }
    ZipRecord r;
    r.name = st.name;
    r.index = static_cast<uint64_t>(i);
    r.compressed_size = st.comp_size;
    r.size = st.size;
    r.method = st.comp_method;
    r.crc32 = st.crc;
    if (r.name.empty()) fail(fmt::format("record {} has an empty name", i));
    if (st.encryption_method != ZIP_EM_NONE) fail(fmt::format("record '{}' is encrypted", r.name));
    if (r.method != 0 && r.method != 8) {
      fail(fmt::format("record '{}' uses compression method {} (only 0 and 8)", r.name, r.method));
    }
    if (r.method == 0 && r.compressed_size != r.size) {
      fail(
          fmt::format("stored record '{}' has sizes {} and {}", r.name, r.compressed_size, r.size));
    }
    // A local header (30 bytes) and a central entry (46), each with the name.
    claimed = saturating_add(claimed, saturating_add(76 + 2 * r.name.size(), r.compressed_size));
    records_.push_back(std::move(r));
  }
  // Disjoint records fit the file; overlapping ones could make a small file
  // load as many large tensors.
  if (claimed > size_) {
    fail(
        fmt::format("its {} records need at least {} bytes of headers and data, more than the "
                    "file's {}: records overlap",
                    count, claimed, size_));
  }
}

const ZipRecord* ZipReader::find(std::string_view name) const {
  for (const auto& r : records_) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

void ZipReader::check_inflated_size(const ZipRecord& r) const {
  // Deflate cannot expand more than 1032:1; a larger claim is a lie. (A
  // stored record's size is its compressed size, which libzip has checked
  // lies inside the file.)
  if (r.method != 0 && (r.size > max_inflated_ || r.size / 1032 > r.compressed_size)) {
    fail(fmt::format("record '{}' inflates to {} bytes, more than the {} allowed", r.name, r.size,
                     max_inflated_));
  }
}

std::string ZipReader::read(const ZipRecord& r) const {
  check_inflated_size(r);  // before the size is allocated
  std::string out(r.size, '\0');
  if (!read_into(r, out.data())) fail(fmt::format("record '{}' fails its CRC-32", r.name));
  return out;
}

bool ZipReader::read_into(const ZipRecord& r, void* out, std::optional<uint32_t>* bytes_crc,
                          int fd) const {
  check_inflated_size(r);
  if (bytes_crc) bytes_crc->reset();
  if (r.method == 0 && r.data_offset != ZipRecord::kUnknown) {
    // Stored, and where it lies is known: read from the file or copied from
    // the archive's bytes on the kernel threads, the CRC-32 taken as it goes.
    uint32_t crc = 0;
    if (fd < 0) {
      crc = detail::crc32_on_threads(bytes_.data() + r.data_offset, r.size, out);
    } else if (const int status = detail::read_on_threads(fd, r.data_offset, out, r.size, &crc)) {
      fail(fmt::format("record '{}' cannot be read: {}", r.name,
                       status > 0 ? errno_text(status) : "the file ended before it"));
    }
    if (bytes_crc) *bytes_crc = crc;
    return crc == r.crc32 || !kCheckCrc;
  }
  const std::unique_ptr<zip_file_t, CloseFile> file(zip_fopen_index(zip_.get(), r.index, 0));
  if (!file) {
    fail(
        fmt::format("record '{}' cannot be opened (libzip: {})", r.name, zip_strerror(zip_.get())));
  }
  const auto libzip_says = [&] {
    return std::string(zip_error_strerror(zip_file_get_error(file.get())));
  };
  const zip_int64_t n = r.size == 0 ? 0 : zip_fread(file.get(), out, r.size);
  if (n < 0) fail(fmt::format("record '{}' cannot be read (libzip: {})", r.name, libzip_says()));
  if (static_cast<uint64_t>(n) < r.size) {
    fail(fmt::format("record '{}' holds {} bytes, its directory entry says {}", r.name, n, r.size));
  }
  // One more byte reaches the record's end, where libzip checks the size and CRC-32.
  char past_end;
  const zip_int64_t more = zip_fread(file.get(), &past_end, 1);
  if (more > 0) {
    fail(fmt::format("record '{}' holds more than the {} bytes its directory entry says", r.name,
                     r.size));
  }
  if (more < 0 && zip_error_code_zip(zip_file_get_error(file.get())) == ZIP_ER_CRC)
    return !kCheckCrc;
  if (more < 0) fail(fmt::format("record '{}' cannot be read (libzip: {})", r.name, libzip_says()));
  if (bytes_crc) *bytes_crc = r.crc32;  // libzip found the bytes' CRC-32 equal to it
  return true;
}

std::optional<std::string_view> ZipReader::view(const ZipRecord& r, bool* crc_ok,
                                                std::optional<uint32_t>* bytes_crc) const {
  if (r.method != 0 || r.data_offset == ZipRecord::kUnknown) return std::nullopt;
  const std::string_view bytes = bytes_.substr(r.data_offset, r.size);
  const uint32_t crc = detail::crc32_on_threads(bytes.data(), bytes.size());
  if (bytes_crc) *bytes_crc = crc;
  *crc_ok = crc == r.crc32 || !kCheckCrc;
  return bytes;
}

}  // namespace gpt2::detail
