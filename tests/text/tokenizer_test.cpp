// Facts about GPT-2's tokenizer that hold whatever the golden corpus holds:
// known ids, special tokens, decoding errors, batches.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpt2/error.h"
#include "test_support.h"

namespace gpt2 {
namespace {

using Ids = std::vector<std::int32_t>;
using test::gpt2_tokenizer;

TEST(Tokenizer, HelloWorldIsTwoKnownTokens) {
  EXPECT_EQ(gpt2_tokenizer().encode("hello world"), (Ids{31373, 995}));
}

TEST(Tokenizer, VocabularyIs50257WithEndOfTextLast) {
  EXPECT_EQ(gpt2_tokenizer().vocab_size(), 50257);
  EXPECT_EQ(gpt2_tokenizer().eot_token(), 50256);
  EXPECT_EQ(gpt2_tokenizer().decode_token(50256), "<|endoftext|>");
}

TEST(Tokenizer, EmptyTextIsNoTokens) {
  EXPECT_TRUE(gpt2_tokenizer().encode("").empty());
  EXPECT_TRUE(gpt2_tokenizer().encode("", true).empty());
  EXPECT_EQ(gpt2_tokenizer().decode({}), "");
}

TEST(Tokenizer, EndOfTextIsPlainTextByDefault) {
  EXPECT_EQ(gpt2_tokenizer().encode("<|endoftext|>"),
            (Ids{27, 91, 437, 1659, 5239, 91, 29}));
}

TEST(Tokenizer, EndOfTextIsOneTokenWhenSpecialAllowed) {
  const Tokenizer& t = gpt2_tokenizer();
  EXPECT_EQ(t.encode("<|endoftext|>", true), (Ids{50256}));
  EXPECT_EQ(t.encode("a<|endoftext|>b", true), (Ids{64, 50256, 65}));
  EXPECT_EQ(t.encode("<|endoftext|><|endoftext|>", true),
            (Ids{50256, 50256}));
  EXPECT_EQ(t.decode(t.encode("x <|endoftext|> y", true)),
            "x <|endoftext|> y");
}

TEST(Tokenizer, DecodeTokenGivesRawBytesEvenHalfCharacters) {
  EXPECT_EQ(gpt2_tokenizer().decode_token(31373), "hello");
  EXPECT_EQ(gpt2_tokenizer().decode_token(995), " world");
  // Byte tokens 126 and 227 are the two halves of U+0085 (NEL).
  EXPECT_EQ(gpt2_tokenizer().decode_token(126), "\xC2");
  EXPECT_EQ(gpt2_tokenizer().decode({126, 227}), "\xC2\x85");
}

TEST(Tokenizer, DecodeRejectsIdOutsideVocabularyNamingIdAndPosition) {
  try {
    gpt2_tokenizer().decode({31373, 995, 50257});
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "token id 50257 at position 2 is outside the vocabulary "
                 "[0, 50257)");
  }
  EXPECT_THROW(gpt2_tokenizer().decode({-1}), InputError);
}

TEST(Tokenizer, DecodeTokenRejectsIdOutsideVocabulary) {
  try {
    gpt2_tokenizer().decode_token(-5);
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "token id -5 is outside the vocabulary [0, 50257)");
  }
  EXPECT_THROW(gpt2_tokenizer().decode_token(60000), InputError);
}

TEST(Tokenizer, EncodeBatchEqualsEncodeInOrderForAnyThreadCount) {
  std::vector<std::string> texts;
  for (int i = 0; i < 40; ++i) {
    texts.push_back("text number " + std::to_string(i) + " <|endoftext|>" +
                    std::string(static_cast<std::size_t>(i), 'z'));
  }
  for (const bool special : {false, true}) {
    std::vector<Ids> expected;
    for (const auto& text : texts) {
      expected.push_back(gpt2_tokenizer().encode(text, special));
    }
    for (const int threads : {1, 2, 3, 64}) {
      EXPECT_EQ(gpt2_tokenizer().encode_batch(texts, special, threads),
                expected)
          << threads << " threads, special " << special;
    }
  }
  EXPECT_TRUE(gpt2_tokenizer().encode_batch({}).empty());
}

TEST(Tokenizer, AWordPastThePieceBoundIsMergedInChunksAndDecodesWhole) {
  // Letters only: the pre-tokenizer keeps them one piece however long.
  std::string word;
  uint32_t x = 12345;
  for (std::size_t i = 0; i < Tokenizer::kMaxPieceBytes + 1000; ++i) {
    x = x * 1103515245u + 12345u;
    word += static_cast<char>('a' + (x >> 16) % 26);
  }
  const std::string head = word.substr(0, Tokenizer::kMaxPieceBytes);
  const std::string tail = word.substr(Tokenizer::kMaxPieceBytes);
  Ids expected = gpt2_tokenizer().encode(head);
  const Ids rest = gpt2_tokenizer().encode(tail);
  expected.insert(expected.end(), rest.begin(), rest.end());
  const Ids ids = gpt2_tokenizer().encode(word);
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(gpt2_tokenizer().decode(ids), word);
}

TEST(Tokenizer, CopiesEncodeAlike) {
  const Tokenizer copy = gpt2_tokenizer();
  EXPECT_EQ(copy.encode("copy me"), gpt2_tokenizer().encode("copy me"));
}

}  // namespace
}  // namespace gpt2
