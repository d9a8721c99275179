// The merge step and the tables behind it.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpt2/text/detail/bpe.h"
#include "gpt2/text/detail/byte_level.h"
#include "gpt2/text/detail/vocab.h"
#include "test_support.h"

namespace gpt2 {
namespace {

const bpe::Vocab& vocab() {
  static const bpe::Vocab v = bpe::load_vocab(
      test::bpe_dir() / "encoder.json", test::bpe_dir() / "vocab.bpe");
  return v;
}

TEST(ByteLevel, SymbolsMatchEncoderPy) {
  EXPECT_EQ(bpe::byte_to_symbol(' '), U'\u0120');   // "Ġ"
  EXPECT_EQ(bpe::byte_to_symbol('\n'), U'\u010A');  // "Ċ"
  EXPECT_EQ(bpe::byte_to_symbol('a'), U'a');
  EXPECT_EQ(bpe::byte_to_symbol(0xAD), U'\u0143');  // the last one remapped
  EXPECT_EQ(bpe::symbols_to_bytes("\xC4\xA0the"), " the");
  EXPECT_FALSE(bpe::symbols_to_bytes(" ").has_value());  // space is remapped
}

// tiktoken ranks a merge by the id of the token it makes, encoder.py by its
// line in vocab.bpe; the two agree only because id == 256 + line rank.
TEST(Vocab, MergeRankOrderIsTokenIdOrder) {
  ASSERT_EQ(vocab().merges.size(), 50000u);
  for (const auto& [key, merge] : vocab().merges) {
    ASSERT_EQ(merge.id, 256 + merge.rank) << "pair key " << key;
  }
}

TEST(Vocab, OnlyEndOfTextIsSpecial) {
  ASSERT_EQ(vocab().specials.size(), 1u);
  EXPECT_EQ(vocab().specials[0].first, "<|endoftext|>");
  EXPECT_EQ(vocab().specials[0].second, 50256);
  EXPECT_EQ(vocab().regular_ids.count("<|endoftext|>"), 0u);
}

// encode() takes a piece that is already a token as that token (as tiktoken
// does); this is what merging would give anyway, so encoder.py agrees.
TEST(Bpe, EveryTokenIsWhatMergingItsBytesGives) {
  bpe::MergeScratch scratch;
  std::vector<std::int32_t> out;
  for (const auto& [bytes, id] : vocab().regular_ids) {
    out.clear();
    bpe::merge_piece(bytes, vocab(), scratch, out);
    ASSERT_EQ(out, std::vector<std::int32_t>{id}) << "token " << id;
  }
}

TEST(Bpe, RepeatedPairsMergeLeftmostFirst) {
  // "bb" is a token but "bbb", "bb b" and "b bb" are not: "bbb" is
  // "bb" + "b", never "b" + "bb"; "bbbbb" is "bb" + "bb" + "b".
  bpe::MergeScratch scratch;
  std::vector<std::int32_t> out;
  bpe::merge_piece("bbb", vocab(), scratch, out);
  EXPECT_EQ(out, (std::vector<std::int32_t>{11848, 65}));
  out.clear();
  bpe::merge_piece("bbbbb", vocab(), scratch, out);
  EXPECT_EQ(out, (std::vector<std::int32_t>{11848, 11848, 65}));
}

}  // namespace
}  // namespace gpt2
