// The gate's zip layer (gpt2/io/checkpoint/zip_reader.h) on hand-built
// archives (testing::zip_with; deflated with zlib): the rules libzip
// enforces and the ones the reader adds on top, each broken once, give a
// FormatError naming the file and the rule.
#include "gpt2/io/checkpoint/zip_reader.h"

#include <gtest/gtest.h>
#include <torch/serialize/output-archive.h>
#include <zlib.h>

#include <sstream>
#include <string>
#include <vector>

#include "gpt2/error.h"
#include "io/io_test_util.h"

namespace gpt2 {
namespace {

using detail::ZipReader;

using testing::stored_entry;
using testing::zip_with;
using testing::ZipEntry;

uint32_t crc_of(const std::string& s) {
  return static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(s.data()), s.size()));
}

ZipEntry deflated(const std::string& name, const std::string& data) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);  // raw deflate, as zip has it
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return {name, out, data.size(), crc_of(data), 8};
}

// The FormatError for opening `bytes` and reading every record.
std::string error_for(const std::string& bytes) {
  return testing::format_error_of([&] {
    ZipReader zip(bytes, "bad.zip");
    for (const auto& r : zip.records()) zip.read(r);
  });
}

#define EXPECT_HAS(what, fragment) EXPECT_NE((what).find(fragment), std::string::npos) << (what)

TEST(ZipReader, StoredAndDeflatedRecordsReadBackAsWritten) {
  const std::string text(5000, 'x');
  const std::string bytes = zip_with({stored_entry("a/one", "hello"), deflated("a/two", text)});
  ZipReader zip(bytes, "good.zip");
  ASSERT_EQ(zip.records().size(), 2u);
  EXPECT_EQ(zip.read(*zip.find("a/one")), "hello");
  EXPECT_EQ(zip.find("a/two")->method, 8);
  EXPECT_LT(zip.find("a/two")->compressed_size, text.size());
  EXPECT_EQ(zip.read(*zip.find("a/two")), text);
  EXPECT_EQ(zip.find("a/three"), nullptr);
}

TEST(ZipReader, ErrorsNameTheFile) {
  EXPECT_HAS(error_for("PK"), "'bad.zip' is not a ZIP archive this library reads: 2 bytes");
}

TEST(ZipReader, ATruncatedArchiveHasNoEndRecord) {
  const std::string bytes = zip_with({stored_entry("a/one", "hello")});
  EXPECT_HAS(error_for(bytes.substr(0, bytes.size() - 5)), "no end-of-central-directory record");
}

TEST(ZipReader, AnArchiveCommentIsRefused) {
  // A comment could hide a second end record that miniz, reading from the end, would take.
  EXPECT_HAS(error_for(zip_with({stored_entry("a/one", "hello")}, "note")),
             "a 4-byte archive comment");
}

TEST(ZipReader, ARepeatedNameIsRefusedAndNamed) {
  EXPECT_HAS(error_for(zip_with({stored_entry("a/one", "1"), stored_entry("a/one", "2")})),
             "record name 'a/one' is repeated");
}

TEST(ZipReader, OverlappingRecordsAreRefused) {
  // Record a's bytes hold record b whole (b's local header, name and data),
  // and b's central entry points there: b's bytes count twice.
  ZipEntry b = stored_entry("a/b", std::string(100, 'b'));
  const ZipEntry a = stored_entry("a/a", zip_with({b}).substr(0, 30 + 3 + 100));
  b.at = 30 + 3;
  EXPECT_HAS(error_for(zip_with({a, b})), "records overlap");
  b.at = -1;
  EXPECT_NO_THROW(ZipReader(zip_with({a, b}), "good.zip"));
}

TEST(ZipReader, AnEncryptedRecordIsRefused) {
  // As PKWARE's encryption stores it: a 12-byte header before the data.
  ZipEntry e = stored_entry("a/one", std::string(12, 'x') + "hello");
  e.size = 5;
  e.flags = 1;
  EXPECT_HAS(error_for(zip_with({e})), "record 'a/one' is encrypted");
}

TEST(ZipReader, AStoredRecordMustHaveOneSize) {
  ZipEntry e = stored_entry("a/one", "hello");
  e.size = 4;
  EXPECT_HAS(error_for(zip_with({e})), "stored record 'a/one' has sizes 5 and 4");
}

TEST(ZipReader, AFlippedByteFailsTheCrc) {
  ZipEntry e = stored_entry("a/one", "hello");
  e.data[0] = 'j';
  const std::string bytes = zip_with({e});
  EXPECT_HAS(error_for(bytes), "record 'a/one' fails its CRC-32");
  ZipReader zip(bytes, "bad.zip");
  std::string out(5, '\0');
  EXPECT_FALSE(zip.read_into(zip.records()[0], out.data()));
  EXPECT_EQ(out, "jello");  // the caller names what the damaged record holds
}

TEST(ZipReader, ADeflatedRecordMustHoldItsDeclaredSize) {
  ZipEntry longer = deflated("a/two", std::string(5000, 'x'));
  longer.size = 4999;
  EXPECT_HAS(error_for(zip_with({longer})), "holds more than the 4999 bytes");
  ZipEntry shorter = deflated("a/two", std::string(5000, 'x'));
  shorter.size = 5001;
  EXPECT_HAS(error_for(zip_with({shorter})), "holds 5000 bytes, its directory entry says 5001");
}

TEST(ZipReader, ABrokenDeflateStreamIsRefused) {
  ZipEntry e = deflated("a/two", std::string(5000, 'x'));
  e.data[0] = '\xff';  // block type 3 is reserved
  EXPECT_HAS(error_for(zip_with({e})), "record 'a/two' cannot be read (libzip: Zlib error");
}

TEST(ZipReader, ADeflatedRecordBeyondTheBoundIsRefused) {
  const std::string bytes = zip_with({deflated("a/two", std::string(5000, 'x'))});
  const auto what = testing::format_error_of([&] {
    ZipReader zip(bytes, "big.zip", /*max_inflated=*/4096);
    zip.read(zip.records()[0]);
  });
  EXPECT_HAS(what, "record 'a/two' inflates to 5000 bytes, more than the 4096 allowed");
}

TEST(ZipReader, AnInflatedSizeClaimIsRefusedBeforeItIsAllocated) {
  // The bound comes before the claimed size is allocated: a zip64 claim of
  // 2^50 bytes is more than any allocator gives.
  ZipEntry e = deflated("a/two", std::string(5000, 'x'));
  e.size = 1ull << 50;
  EXPECT_HAS(error_for(zip_with({e})),
             "inflates to 1125899906842624 bytes, more than the 67108864");
}

TEST(ZipReader, AnUnknownCompressionMethodIsRefused) {
  ZipEntry e = stored_entry("a/one", "hello");
  e.method = 12;  // bzip2, which libzip could read but LibTorch's miniz cannot
  EXPECT_HAS(error_for(zip_with({e})), "record 'a/one' uses compression method 12 (only 0 and 8)");
}

// Stored records are copied from where the directory and local headers
// say their data lies (zip_offsets.h), not through libzip: the offsets are
// found for hand-built archives and for LibTorch's own writer (which pads
// each local header's extra field to align the data), and what is read
// there is what was written.
TEST(ZipReader, StoredRecordsAreReadFromTheirDataOffsets) {
  const std::string bytes = zip_with({stored_entry("a/one", "hello"),
                                      deflated("a/two", std::string(3000, 'y')),
                                      stored_entry("a/three", "world!")});
  ZipReader zip(bytes, "good.zip");
  for (const char* name : {"a/one", "a/three"}) {
    const auto& r = *zip.find(name);
    ASSERT_NE(r.data_offset, detail::ZipRecord::kUnknown) << name;
    EXPECT_EQ(bytes.substr(r.data_offset, r.size), zip.read(r)) << name;
  }
  EXPECT_EQ(zip.read(*zip.find("a/three")), "world!");

  torch::serialize::OutputArchive archive;
  archive.write("w", torch::arange(1000, torch::kFloat));
  archive.write("b", torch::ones({7}, torch::kDouble));
  std::ostringstream out;
  archive.save_to(out);
  const std::string written = out.str();
  ZipReader torch_zip(written, "torch.pt");
  int stored = 0;
  for (const auto& r : torch_zip.records()) {
    ASSERT_NE(r.data_offset, detail::ZipRecord::kUnknown) << r.name;
    if (r.method != 0) continue;
    ++stored;
    EXPECT_EQ(written.substr(r.data_offset, r.size), torch_zip.read(r)) << r.name;
  }
  EXPECT_GE(stored, 2);
}

}  // namespace
}  // namespace gpt2
