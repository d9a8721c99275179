// The safetensors format's rules, each broken once in a hand-built file.
#include "gpt2/io/safetensors.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/io_test_util.h"
#include "test_util.h"

namespace gpt2 {
namespace {

// A file from header text and data bytes; the length field is the text's
// unless `length` overrides it.
std::string file_of(const std::string& header, const std::string& data, int64_t length = -1) {
  const uint64_t n = length < 0 ? header.size() : static_cast<uint64_t>(length);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

const std::string kEight(8, '\x01');  // two float32 values' bytes
const std::string kGood = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

struct Broken {
  const char* rule;
  std::string bytes;
  const char* message;  // a fragment of the FormatError's message
};

// A header of `n` empty tensors, each "t<i>" of shape [0].
std::string empty_entries(int64_t n) {
  std::string header = "{";
  for (int64_t i = 0; i < n; ++i) {
    header += (i ? ",\"t" : "\"t") + std::to_string(i) +
              R"(":{"dtype":"F32","shape":[0],"data_offsets":[0,0]})";
  }
  return header + "}";
}

std::vector<Broken> broken_files() {
  return {
      {"shorter than the length field", "abc", "3 bytes, shorter than the 8-byte header length"},
      {"header longer than the limit", file_of(kGood, kEight, 100'000'001),
       "header length 100000001 exceeds the limit 100000000"},
      {"header past the end", file_of(kGood, kEight, 1000), "header length 1000 runs past the end"},
      {"header not an object", file_of("[1, 2]  ", ""), "the header does not begin with '{'"},
      {"bytes after the header's brace", file_of(kGood + "x", kEight), "bytes other than spaces after"},
      {"invalid JSON", file_of(R"({"w":})", ""), "the header is not valid JSON"},
      // 200,000 nested arrays: refused at the 33rd level, before anything
      // walks (or destroys) a structure that deep.
      {"deep nesting", file_of("{\"w\":" + std::string(200000, '[') + "}", ""),
       "the header nests arrays and objects deeper than 32 levels"},
      {"duplicate key", file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", kEight),
       "the header has the key 'w' twice in one object"},
      {"duplicate field in an entry",
       file_of(R"({"w":{"dtype":"F32","dtype":"F16","shape":[2],"data_offsets":[0,8]}})", kEight),
       "the header has the key 'dtype' twice in one object"},
      {"entry not an object", file_of(R"({"w":1})", ""), "tensor 'w': its entry is not an object"},
      {"entry without dtype", file_of(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", kEight),
       "tensor 'w': its entry has no dtype"},
      {"dtype not a string", file_of(R"({"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", kEight),
       "tensor 'w': dtype is not a string"},
      {"dtype not supported", file_of(R"({"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", kEight),
       "tensor 'w': dtype \"I64\" is not supported"},
      {"shape not an array", file_of(R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", kEight),
       "tensor 'w': shape is not an array"},
      {"negative size", file_of(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", kEight),
       "shape [-2] has an entry that is not a size"},
      {"shape overflows", file_of(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", kEight),
       "shape [4294967296,4294967296] overflows"},
      {"offsets not a pair", file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8]}})", kEight),
       "data_offsets [8] is not [begin, end]"},
      {"end before begin", file_of(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", kEight),
       "data_offsets [8, 0] end before they begin"},
      {"size not numel times dtype size",
       file_of(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", kEight),
       "data_offsets [0, 8] hold 8 bytes, shape [3] of F32 needs 3 x 4"},
      {"a hole", file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", kEight + "1234"),
       "tensor 'b' begins at 8 but the previous tensor ends at 4 (a hole)"},
      {"an overlap", file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", kEight + "1234"),
       "tensor 'b' begins at 4 but the previous tensor ends at 8 (an overlap)"},
      {"data past the last tensor", file_of(kGood, kEight + "junk"),
       "the tensors end at 8 but the data section holds 12 bytes"},
      {"data shorter than the tensors", file_of(kGood, "1234"),
       "the tensors end at 8 but the data section holds 4 bytes"},
      // Past the tensor bound: refused once parsed, before any entry is
      // looked at (1.2 million of these had cost minutes).
      {"more tensors than the bound", file_of(empty_entries(kSafetensorsMaxTensors + 2), ""),
       "the header lists 65538 entries, more than the 65536 tensors this reader takes"},
      {"metadata not an object", file_of(R"({"__metadata__":1})", ""), "__metadata__ is not an object"},
      {"metadata value not a string", file_of(R"({"__metadata__":{"k":1}})", ""),
       "__metadata__ value of 'k' is not a string"},
  };
}

TEST(SafetensorsFormat, EveryBrokenRuleIsAFormatErrorNamingTheFileAndTheRule) {
  testing::TempDir dir;
  for (const Broken& b : broken_files()) {
    const std::string path = dir / "broken.safetensors";
    testing::write_file(path, b.bytes);
    const std::string what = testing::format_error_of([&] { read_safetensors(path); });
    EXPECT_NE(what.find(path), std::string::npos) << b.rule << ": " << what;
    EXPECT_NE(what.find(b.message), std::string::npos) << b.rule << ": " << what;
  }
}

TEST(SafetensorsFormat, TheUnbrokenFileOfTheTableReads) {
  const auto c = parse_safetensors(file_of(kGood + "   ", kEight), "good");
  ASSERT_EQ(c.tensors.size(), 1u);
  EXPECT_EQ(c.tensors[0].first, "w");
  EXPECT_EQ(c.tensors[0].second.sizes(), torch::IntArrayRef({2}));
}

TEST(SafetensorsFormat, BytesRoundTripEveryDtypeAndMetadataWithAPaddedHeader) {
  SafetensorsContents c;
  c.metadata = {{"format", "pt"}, {"note", "x"}};
  c.tensors = {{"f32", torch::randn({3, 5})},
               {"f16", torch::randn({7}).to(torch::kHalf)},
               {"bf16", torch::randn({2, 2, 2}).to(torch::kBFloat16)},
               {"empty", torch::empty({0, 4})}};
  const std::string bytes = safetensors_bytes(c);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ(n % 8, 0u) << "header padded to 8 bytes";
  const auto back = parse_safetensors(bytes, "memory");
  EXPECT_EQ(back.metadata, c.metadata);
  ASSERT_EQ(back.tensors.size(), c.tensors.size());
  std::map<std::string, torch::Tensor> by_name(back.tensors.begin(), back.tensors.end());
  for (const auto& [name, t] : c.tensors) {
    EXPECT_EQ(by_name.at(name).scalar_type(), t.scalar_type()) << name;
    EXPECT_TRUE(torch::equal(by_name.at(name), t)) << name;
  }
}

}  // namespace
}  // namespace gpt2
