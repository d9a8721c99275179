// The checkpoint gate (gpt2/io/checkpoint/torch_archive.h): hand-built
// malformed checkpoints, each breaking one rule once, give a FormatError
// naming the file and the rule; the model is untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/io/checksum.h"
#include "gpt2/io/checkpoint/pickle.h"
#include "gpt2/io/checkpoint/zip_reader.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace gpt2 {
namespace {

using testing::Records;
using testing::zip_of;

class Gate : public ::testing::Test {
 protected:
  void SetUp() override {
    // One block, width 8, vocab 16: wte is a (16, 8) float32 tensor in storage 0.
    model_ = GPT(GPTConfig().block_size(8).vocab_size(16).n_layer(1).n_head(2).n_embd(8));
    save_checkpoint(dir_ / "good.pt", *model_);
    good_ = testing::read_file(dir_ / "good.pt");
    records_ = testing::records_of(good_);
  }
  std::string& record(const std::string& name) {
    for (auto& [n, bytes] : records_) {
      if (n == name) return bytes;
    }
    throw std::runtime_error("no record " + name);
  }
  void erase(const std::string& name) {
    records_.erase(std::remove_if(records_.begin(), records_.end(),
                                  [&](const auto& r) { return r.first == name; }),
                   records_.end());
  }
  // The FormatError message for loading `bytes` (file bad.pt); checks the
  // message names the file and that the model is untouched.
  std::string error_for(const std::string& bytes) {
    testing::write_file(dir_ / "bad.pt", bytes);
    const auto before = testing::snapshot(*model_);
    const std::string what = testing::format_error_of([&] { load_weights(dir_ / "bad.pt", *model_); });
    EXPECT_NE(what.find(dir_ / "bad.pt"), std::string::npos) << what;
    EXPECT_TRUE(testing::same_tensors(*model_, before));
    return what;
  }
  std::string error_for_records() { return error_for(zip_of(records_)); }
  static void replace_once(std::string& s, const std::string& from, const std::string& to) {
    const size_t at = s.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    s.replace(at, from.size(), to);
  }

  testing::TempDir dir_;
  GPT model_{nullptr};
  std::string good_;
  Records records_;
};

#define EXPECT_HAS(what, fragment) EXPECT_NE((what).find(fragment), std::string::npos) << (what)

TEST_F(Gate, ARepackedCheckpointLoads) {
  testing::write_file(dir_ / "repacked.pt", zip_of(records_));
  EXPECT_TRUE(testing::same_tensors(*load_checkpoint(dir_ / "repacked.pt").model,
                                    testing::snapshot(*model_)));
}

TEST_F(Gate, ZipWithoutItsEndRecordIsRefused) {
  EXPECT_HAS(error_for(good_.substr(0, good_.size() - 30)), "no end-of-central-directory record");
}

TEST_F(Gate, ZipWithABadCentralEntryIsRefused) {
  std::string bytes = good_;
  replace_once(bytes, std::string("PK\x01\x02", 4), std::string("PK\x01\x03", 4));
  EXPECT_HAS(error_for(bytes), "no end-of-central-directory record whose central directory and "
                               "local headers fit the file (libzip: ");
}

TEST_F(Gate, ARecordOfUnknownCompressionIsRefused) {
  std::string bytes = zip_of(records_);
  bytes[8] = 12;  // the local header's method
  bytes[bytes.find(std::string("PK\x01\x02", 4)) + 10] = 12;
  EXPECT_HAS(error_for(bytes), "uses compression method 12");
}

TEST_F(Gate, AFlippedByteInAPickleFailsItsCrc) {
  std::string bytes = good_;
  replace_once(bytes, "format_version", "format_versiom");
  EXPECT_HAS(error_for(bytes), "record 'archive/data.pkl' fails its CRC-32");
}

TEST_F(Gate, AnUnexpectedRecordIsRefused) {
  records_.emplace_back("archive/extra.txt", "hello");
  EXPECT_HAS(error_for_records(), "unexpected record 'archive/extra.txt'");
}

TEST_F(Gate, RecordsOutsideTheArchiveFolderAreRefused) {
  records_.emplace_back("other/data.pkl", "x");
  EXPECT_HAS(error_for_records(), "record 'other/data.pkl' is outside the archive folder");
}

TEST_F(Gate, APythonTorchSaveFileIsNamedForWhatItIs) {
  records_ = {{"archive/data.pkl", std::string("\x80\x02}q\x00.", 6)}, {"archive/version", "3\n"}};
  const std::string what = error_for_records();
  EXPECT_HAS(what, "is a PyTorch pickle archive (Python's torch.save");
  EXPECT_HAS(what, "expected a TorchScript archive written by gpt2::save_checkpoint");
}

TEST_F(Gate, AMissingStorageRecordIsRefused) {
  erase("archive/data/3");
  EXPECT_HAS(error_for_records(), "storage record data/3 is missing");
}

TEST_F(Gate, AnUnusedStorageRecordIsRefused) {
  records_.emplace_back("archive/data/99", std::string(8, '\0'));
  EXPECT_HAS(error_for_records(), "record 'archive/data/99' is used by no tensor");
}

// The records beside the data that LibTorch 1.13 and 2.x write: the gate
// takes each release's set, whichever release runs it, and nothing else.
class GateMarkers : public Gate {
 protected:
  void SetUp() override {
    Gate::SetUp();
    for (const char* name : {"archive/byteorder", "archive/.data/serialization_id",
                             "archive/.format_version", "archive/.storage_alignment",
                             "archive/.data/version"}) {
      erase(name);
    }
    if (std::none_of(records_.begin(), records_.end(),
                     [](const auto& r) { return r.first == "archive/version"; })) {
      records_.emplace_back("archive/version", "3\n");
    }
  }
  bool loads() {
    testing::write_file(dir_ / "marked.pt", zip_of(records_));
    return testing::same_tensors(*load_checkpoint(dir_ / "marked.pt").model, testing::snapshot(*model_));
  }
};

TEST_F(GateMarkers, EachReleasesRecordSetLoads) {
  EXPECT_TRUE(loads()) << "1.13's: version alone";
  records_.emplace_back("archive/byteorder", "little");
  records_.emplace_back("archive/.data/serialization_id", "1670383126663885709005448845314784044133");
  EXPECT_TRUE(loads()) << "2.1 to 2.6's";
  records_.emplace_back("archive/.format_version", "1");
  records_.emplace_back("archive/.storage_alignment", "64");
  EXPECT_TRUE(loads()) << "2.7's";
  erase("archive/version");
  records_.emplace_back("archive/.data/version", "6\n");
  EXPECT_TRUE(loads()) << "file format 6 and later, in .data/version";
}

TEST_F(GateMarkers, AVersionLibTorchDoesNotReadIsRefused) {
  record("archive/version") = "11\n";
  EXPECT_HAS(error_for_records(), "record 'archive/version': it holds '11\\n', not a file format from 3 to 10");
  record("archive/version") = "2\n";
  EXPECT_HAS(error_for_records(), "record 'archive/version': it holds '2\\n'");
  record("archive/version") = "3";
  EXPECT_HAS(error_for_records(), "record 'archive/version': it holds '3'");
}

TEST_F(GateMarkers, OneVersionRecordExactly) {
  records_.emplace_back("archive/.data/version", "3\n");
  EXPECT_HAS(error_for_records(), "it has 2 version records (version, .data/version), not 1");
  erase("archive/.data/version");
  erase("archive/version");
  EXPECT_HAS(error_for_records(), "it has 0 version records");
}

TEST_F(GateMarkers, AMarkerWithOtherContentsIsRefused) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"archive/byteorder", "big"},
      {"archive/.data/serialization_id", "12ab"},
      {"archive/.format_version", "2"},
      {"archive/.storage_alignment", "32"},
      {"archive/byteorder", std::string(100, 'l')},
  };
  for (const auto& [name, bytes] : bad) {
    records_.emplace_back(name, bytes);
    EXPECT_HAS(error_for_records(), "record '" + name + "'");
    erase(name);
  }
}

TEST_F(Gate, CodeOtherThanAnArchiveClassIsRefused) {
  record("archive/code/__torch__.py") += "  def forward(self):\n    return 1\n";
  EXPECT_HAS(error_for_records(), "code record 'archive/code/__torch__.py'");
}

TEST_F(Gate, ACodeRecordNeedsItsDebugPickle) {
  erase("archive/code/__torch__.py.debug_pkl");
  EXPECT_HAS(error_for_records(), "archive/code/__torch__.py has no .debug_pkl record");
}

TEST_F(Gate, AnAttributeMustHaveItsDeclaredType) {
  for (auto& [name, bytes] : records_) {
    const size_t at = bytes.find("  n_layer : int\n");
    if (name.find("/code/") != std::string::npos && at != std::string::npos) {
      bytes.replace(at, 16, "  n_layer : str\n");
    }
  }
  EXPECT_HAS(error_for_records(), "the archive.gpt2.n_layer is a int, its class declares str");
}

TEST_F(Gate, AGlobalOutsideTheWhitelistIsRefused) {
  replace_once(record("archive/data.pkl"), "collections\nOrderedDict", "subprocess\nOrderedDict");
  EXPECT_HAS(error_for_records(), "global subprocess.OrderedDict is not allowed");
}

TEST_F(Gate, AStorageOfTheWrongSizeIsRefused) {
  // wte's storage: ('storage', FloatStorage, '0', 'cpu', 128) -> numel 129.
  replace_once(record("archive/data.pkl"), std::string("cpu", 3) + "q\x0aK\x80",
               std::string("cpu", 3) + "q\x0aK\x81");
  EXPECT_HAS(error_for_records(), "storage data/0 holds 512 bytes, not 129 Float elements");
}

TEST_F(Gate, ATensorViewPastItsStorageIsRefused) {
  replace_once(record("archive/data.pkl"), "(K\x10K\x08t", "(K\x11K\x08t");  // wte (16, 8) -> (17, 8)
  EXPECT_HAS(error_for_records(), "does not fit its storage of 128 elements");
}

TEST_F(Gate, TrailingBytesAfterStopAreRefused) {
  record("archive/data.pkl") += "N";
  EXPECT_HAS(error_for_records(), "bytes follow STOP");
}

TEST(Pickle, NestingDeeperThanTheLimitIsRefused) {
  const int depth = detail::kMaxPickleDepth + 1;
  const std::string deep = "\x80\x02" + std::string(depth, ']') + std::string(depth - 1, 'a') + ".";
  EXPECT_HAS(testing::format_error_of([&] { detail::read_pickle(deep, "f", "data.pkl"); }),
             "nesting deeper than 64");
  const std::string ok = "\x80\x02" + std::string(depth - 1, ']') + std::string(depth - 2, 'a') + ".";
  EXPECT_EQ(detail::read_pickle(ok, "f", "data.pkl")->depth, depth - 1);
}

TEST(Pickle, AMemoReferenceToAContainerIsRefused) {
  // EMPTY_LIST, BINPUT 0, BINGET 0, APPEND: a list inside itself.
  const std::string cycle("\x80\x02]q\x00" "h\x00" "a.", 9);
  EXPECT_HAS(testing::format_error_of([&] { detail::read_pickle(cycle, "f", "data.pkl"); }),
             "a memo reference to a dict, list or object");
}

TEST(Pickle, OpcodesOutsideTheWhitelistAreRefused) {
  // GLOBAL os system is refused by name; BINBYTES ('B') by opcode.
  EXPECT_HAS(testing::format_error_of(
                 [&] { detail::read_pickle("\x80\x02" "cos\nsystem\n.", "f", "data.pkl"); }),
             "global os.system is not allowed");
  EXPECT_HAS(testing::format_error_of([&] {
               detail::read_pickle(std::string("\x80\x02" "B\x01\x00\x00\x00x.", 10), "f", "x");
             }),
             "opcode 0x42 is not allowed");
}

}  // namespace
}  // namespace gpt2
