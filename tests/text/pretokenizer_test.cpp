// How text is cut into pieces before merging.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <sstream>

#include "gpt2/text/detail/pretokenizer.h"
#include "test_support.h"

namespace gpt2 {
namespace {

std::vector<std::string> split(std::string_view text) {
  static const bpe::Pretokenizer pretokenizer;
  std::vector<std::string_view> pieces;
  pretokenizer.split(text, pieces);
  return {pieces.begin(), pieces.end()};
}

using Pieces = std::vector<std::string>;

TEST(Pretokenizer, ContractionsAreLowercaseOnly) {
  EXPECT_EQ(split("don't"), (Pieces{"don", "'t"}));
  EXPECT_EQ(split("DON'T"), (Pieces{"DON", "'", "T"}));
  EXPECT_EQ(split("I'm we'll"), (Pieces{"I", "'m", " we", "'ll"}));
}

TEST(Pretokenizer, SpaceJoinsTheNextWordAndLastSpaceOfARun) {
  EXPECT_EQ(split("a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(split("a \n b"), (Pieces{"a", " \n", " b"}));
  EXPECT_EQ(split("end  "), (Pieces{"end", "  "}));
  EXPECT_EQ(split("x1234 56"), (Pieces{"x", "1234", " 56"}));
}

TEST(Pretokenizer, WhiteSpaceIsUnicodeWhiteSpaceNotPerlSpace) {
  // U+0085 is White_Space; U+180E is not (PCRE2's \s would take it).
  EXPECT_EQ(split("a\n\n\xC2\x85" "b"),
            (Pieces{"a", "\n\n", "\xC2\x85", "b"}));
  EXPECT_EQ(split("a\n\n\xE1\xA0\x8E" "b"),
            (Pieces{"a", "\n", "\n", "\xE1\xA0\x8E", "b"}));
}

TEST(Pretokenizer, CombiningMarksAreNotLetters) {
  // "e" + U+0301 COMBINING ACUTE ACCENT: the mark is its own piece.
  EXPECT_EQ(split("xe\xCC\x81x"), (Pieces{"xe", "\xCC\x81", "x"}));
}

TEST(Pretokenizer, InvalidBytesSplitLikePunctuation) {
  EXPECT_EQ(split("a \xFF!b"), (Pieces{"a", " \xFF!", "b"}));
  EXPECT_EQ(split("caf\xC3"), (Pieces{"caf", "\xC3"}));
  EXPECT_EQ(split("'\xFFs"), (Pieces{"'\xFF", "s"}));
  EXPECT_EQ(split("\xFF's"), (Pieces{"\xFF'", "s"}));
  // An encoded surrogate and an overlong '/' are invalid too.
  EXPECT_EQ(split("x\xED\xA0\x80\xC0\xAFy"),
            (Pieces{"x", "\xED\xA0\x80\xC0\xAF", "y"}));
  EXPECT_EQ(split("a  \xFF"), (Pieces{"a", " ", " \xFF"}));
}

TEST(Pretokenizer, HugeRunsStayOnePiece) {
  const std::string spaces(100000, ' ');
  EXPECT_EQ(split(spaces + "x"), (Pieces{std::string(99999, ' '), " x"}));
  const std::string invalid(100000, '\xFF');
  EXPECT_EQ(split(invalid), (Pieces{invalid}));
}

std::string utf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// The class golden.json's probes give `cp` here: 's' white space, 'w'
// letter or number, 'o' other (see its made_by.code_point_classes).
char our_class(char32_t cp) {
  const std::string c = utf8(cp);
  if (split("a\n\n" + c + "b")[1] == "\n\n") return 's';
  return split(c + "'s").back() == "'s" ? 'w' : 'o';
}

// Exhaustive: all 1,112,064 code points against tiktoken 1.0.22. This is
// what pins kNewLetters and kNewNumbers, and what fails first if a PCRE2
// update moves to a Unicode version other than tiktoken's.
TEST(Pretokenizer, EveryCodePointIsClassedAsTiktokenClassesIt) {
  const auto golden = nlohmann::json::parse(
      test::read_bytes(test::test_dir() / "golden.json"));
  std::istringstream runs(golden.at("code_point_classes").get<std::string>());
  std::vector<std::pair<char32_t, char>> starts;  // (first code point, class)
  for (std::string run; runs >> run;) {
    starts.emplace_back(std::stoul(run.substr(0, run.size() - 2), nullptr, 16),
                        run.back());
  }
  ASSERT_GT(starts.size(), 1000u);
  std::size_t run = 0, checked = 0, wrong = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp == 0xD800) cp = 0xE000;  // surrogates are not characters
    while (run + 1 < starts.size() && starts[run + 1].first <= cp) ++run;
    const char expected = starts[run].second;
    const char actual = our_class(cp);
    ++checked;
    if (actual != expected && ++wrong <= 20) {
      ADD_FAILURE() << "U+" << std::hex << std::uppercase
                    << static_cast<std::uint32_t>(cp) << ": tiktoken '"
                    << expected << "', ours '" << actual << "'";
    }
  }
  EXPECT_EQ(checked, 1112064u);
  EXPECT_EQ(wrong, 0u);
}

}  // namespace
}  // namespace gpt2
