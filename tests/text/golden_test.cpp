// Ids of a varied corpus against tests/text/golden.json, which
// make_golden.js wrote with tiktoken (valid UTF-8) and with an independent
// JavaScript reference (invalid UTF-8; see golden.json's "made_by").

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "test_support.h"

namespace gpt2 {
namespace {

struct GoldenCase {
  std::string name;
  std::string bytes;
  bool allow_special;
  std::string reference;
  std::vector<std::int32_t> ids;
};

std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

const std::vector<GoldenCase>& golden() {
  static const std::vector<GoldenCase> cases = [] {
    const auto json = nlohmann::json::parse(
        test::read_bytes(test::test_dir() / "golden.json"));
    std::vector<GoldenCase> out;
    for (const auto& c : json.at("cases")) {
      out.push_back({c.at("name"),
                     c.contains("text") ? c.at("text").get<std::string>()
                                        : from_hex(c.at("bytes_hex")),
                     c.at("allow_special"), c.at("reference"), c.at("ids")});
    }
    return out;
  }();
  return cases;
}

std::size_t count(const std::string& reference) {
  std::size_t n = 0;
  for (const GoldenCase& c : golden()) n += c.reference == reference;
  return n;
}

TEST(Golden, CorpusHasBothKindsOfCases) {
  EXPECT_GE(count("tiktoken"), 60u);
  EXPECT_GE(count("surrogateescape"), 20u);
}

TEST(Golden, ValidUtf8EncodesExactlyAsTiktoken) {
  for (const GoldenCase& c : golden()) {
    if (c.reference != "tiktoken") continue;
    EXPECT_EQ(test::gpt2_tokenizer().encode(c.bytes, c.allow_special), c.ids)
        << c.name;
  }
}

TEST(Golden, InvalidUtf8EncodesAsSurrogateEscapedText) {
  for (const GoldenCase& c : golden()) {
    if (c.reference != "surrogateescape") continue;
    EXPECT_EQ(test::gpt2_tokenizer().encode(c.bytes, c.allow_special), c.ids)
        << c.name;
  }
}

TEST(Golden, GoldenIdsDecodeToTheirText) {
  for (const GoldenCase& c : golden()) {
    EXPECT_EQ(test::gpt2_tokenizer().decode(c.ids), c.bytes) << c.name;
  }
}

}  // namespace
}  // namespace gpt2
