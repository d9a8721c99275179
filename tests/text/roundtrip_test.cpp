// decode(encode(bytes)) == bytes for any bytes, at any size.

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "test_support.h"

namespace gpt2 {
namespace {

using test::gpt2_tokenizer;

// Random bytes drawn from a mix that exercises every pattern branch: ASCII
// letters, digits, apostrophes and spaces, whole UTF-8 characters, and raw
// bytes >= 0x80 that are mostly not valid UTF-8.
std::string random_bytes(std::mt19937& rng, std::size_t length) {
  static const std::vector<std::string> kPieces = {
      "a", "Z", "s", "t", "'", "0", "7", " ", " ", "\n", "\t", "\r", ".",
      "<|endoftext|>", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80",
      "\xCC\x81", "\xC2\x85", "\xE3\x80\x80"};
  std::string out;
  while (out.size() < length) {
    switch (rng() % 3) {
      case 0:
        out.push_back(static_cast<char>(rng() % 256));
        break;
      case 1:
        out.push_back(static_cast<char>(0x80 + rng() % 128));
        break;
      default:
        out += kPieces[rng() % kPieces.size()];
    }
  }
  out.resize(length);
  return out;
}

TEST(RoundTrip, RandomBytesIncludingInvalidUtf8RoundTripExactly) {
  std::mt19937 rng(20240601);
  for (int trial = 0; trial < 3000; ++trial) {
    const std::string bytes = random_bytes(rng, rng() % 200);
    for (const bool special : {false, true}) {
      const auto ids = gpt2_tokenizer().encode(bytes, special);
      ASSERT_EQ(gpt2_tokenizer().decode(ids), bytes)
          << "trial " << trial << ", special " << special;
    }
  }
}

TEST(RoundTrip, EverySingleByteAndPairRoundTrips) {
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      const std::string bytes{static_cast<char>(a), static_cast<char>(b)};
      ASSERT_EQ(gpt2_tokenizer().decode(gpt2_tokenizer().encode(bytes)),
                bytes)
          << a << " " << b;
    }
  }
}

// Merging is O(n log n): 100,000 letters take milliseconds. The 10 s bound
// only catches a quadratic merge (about 10^10 steps here), not slowness.
TEST(RoundTrip, HundredThousandLetterWordIsFastAndRoundTrips) {
  const std::string word(100000, 'a');
  const auto start = std::chrono::steady_clock::now();
  const auto ids = gpt2_tokenizer().encode(word);
  const std::chrono::duration<double> took =
      std::chrono::steady_clock::now() - start;
  EXPECT_LT(took.count(), 10.0);
  EXPECT_EQ(gpt2_tokenizer().decode(ids), word);
  // "aaaa" (24794) is the longest run of a's in the vocabulary; golden.json
  // has tiktoken give 750 of them for 3,000 a's.
  EXPECT_EQ(ids, std::vector<std::int32_t>(25000, 24794));
}

TEST(RoundTrip, WholeTinyShakespeareIs338025TokensAndRoundTrips) {
  const std::string text = test::read_bytes(
      std::filesystem::path(GPT2_SHAKESPEARE));
  ASSERT_EQ(text.size(), 1115394u);
  const auto ids = gpt2_tokenizer().encode(text);
  EXPECT_EQ(ids.size(), 338025u);
  EXPECT_EQ(gpt2_tokenizer().decode(ids), text);
}

}  // namespace
}  // namespace gpt2
