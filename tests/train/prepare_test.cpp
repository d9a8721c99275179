// gpt2 prepare streamed: pieces on threads give the ids of the whole text,
// and llm.c's shards hold what fineweb.py would write.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <random>

#include "gpt2/error.h"
#include "gpt2/file/atomic_write_fault.h"
#include "gpt2/text/tokenizer.h"
#include "gpt2/train/data/data_folder.h"
#include "gpt2/train/data/shard_file.h"
#include "gpt2/train/data/text_input.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/token_loader.h"
#include "test_util.h"

namespace gpt2 {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<int32_t> file_ids(const std::string& path) {
  const TokenFile f(path);
  return {f.data(), f.data() + f.size()};
}

std::vector<int32_t> shard_ids(const std::string& path) {
  const ShardFile f(path);
  return {f.data(), f.data() + f.size()};
}

// Text that stresses the cut: Unicode spaces before newlines (U+00A0,
// U+3000, U+2028, U+0085), CJK lines, CRLF, tabs, runs of spaces, invalid
// bytes, contractions, and a run without white space longer than a piece.
std::string hostile_text() {
  const std::vector<std::string> parts = {
      "Hello world\n", "  two  spaces \n\n", "tab\tand\r\nCRLF\r\n", "nbsp\xC2\xA0\n",
      "ideographic\xE3\x80\x80 \n", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\n", "line\xE2\x80\xA8 next\n",
      "nel\xC2\x85\tx ", "bad \xFF\xFE bytes \xC3\n", "it's they'll I'd \n", "1234 5678 ",
      std::string(300, 'x') + " ", "!!!??? ...\n"};
  std::mt19937 rng(5);
  std::string text;
  while (text.size() < 40000) text += parts[rng() % parts.size()];
  return text;
}

// The split nanoGPT's prepare.py makes, written again here.
size_t nanogpt_split(const std::string& text, double val_fraction) {
  size_t split = static_cast<size_t>(static_cast<double>(text.size()) * (1 - val_fraction));
  while (split > 0 && split < text.size() && (static_cast<unsigned char>(text[split]) & 0xC0) == 0x80) --split;
  return split;
}

TEST(Prepare, StreamedPiecesGiveTheIdsOfTheWholeText) {
  testing::TempDir dir;
  const Tokenizer bpe = Tokenizer::gpt2();
  std::ofstream(dir / "hostile.txt", std::ios::binary) << hostile_text();
  for (const std::string& input : {std::string(GPT2_SHAKESPEARE), std::string(dir / "hostile.txt")}) {
    const std::string text = slurp(input);
    const size_t split = nanogpt_split(text, 0.1);
    const std::vector<int32_t> train = bpe.encode(std::string_view(text).substr(0, split));
    const std::vector<int32_t> val = bpe.encode(std::string_view(text).substr(split));
    for (const size_t piece : {size_t{64}, size_t{4096}}) {
      PrepareOptions o;
      o.piece_bytes = piece;
      o.threads = 2;
      prepare_dataset({input}, dir / "d", o);
      EXPECT_EQ(file_ids(dir / "d/train.bin"), train) << input << ", pieces of " << piece;
      EXPECT_EQ(file_ids(dir / "d/val.bin"), val) << input << ", pieces of " << piece;
    }
  }
}

TEST(Prepare, SafeCutIsBeforeWhiteSpaceAfterNone) {
  EXPECT_EQ(safe_cut("ab cd", 4), 2u);
  EXPECT_EQ(safe_cut("ab  cd", 4), 2u);                   // not inside a run of spaces
  EXPECT_EQ(safe_cut("a\xC2\xA0 b", 4), 0u);              // U+00A0 is white space
  EXPECT_EQ(safe_cut("\xE6\x97\xA5\nb", 4), 3u);          // after a CJK character
  EXPECT_EQ(safe_cut("abcdef", 5), 0u);
}

// Two documents: each starts with <|endoftext|> (fineweb.py), the first
// shard is val, every shard but the last holds shard_tokens ids, and a
// second run with fewer shards removes the first run's extra ones.
// A stretch with no safe cut (NUL bytes) is cut anyway once it reaches
// kMaxPieces pieces, at a character boundary: memory stays bounded.
TEST(Prepare, AStretchWithoutASafeCutIsCutAtTheBound) {
  testing::TempDir dir;
  const size_t piece = 64;
  std::string text(piece * kMaxPieces * 3, '\0');
  for (size_t i = piece - 1; i < text.size(); i += 5) text.replace(i, 2, "\xc3\xa9");  // é
  text.resize(piece * kMaxPieces * 3);
  std::ofstream(dir / "zeros.txt", std::ios::binary) << text;
  std::string joined;
  size_t longest = 0;
  read_pieces(list_text_inputs({dir / "zeros.txt"}), piece, {}, [&](TextPiece&& p) {
    longest = std::max(longest, p.text.size());
    EXPECT_NE(static_cast<unsigned char>(p.text[0]) & 0xC0, 0x80) << "cut inside a character";
    joined += p.text;
  });
  EXPECT_LE(longest, piece * kMaxPieces + piece);
  EXPECT_EQ(joined, text);
}

TEST(Prepare, LlmcShardsAreFinewebsLayout) {
  testing::TempDir dir;
  const Tokenizer bpe = Tokenizer::gpt2();
  std::ofstream(dir / "a.txt") << "The first document, short.\n";
  std::ofstream(dir / "b.txt") << std::string("And a second one, a little longer than the first. ") + "More words here.";
  std::vector<int32_t> all;
  for (const char* name : {"a.txt", "b.txt"}) {
    all.push_back(bpe.eot_token());
    const auto ids = bpe.encode(slurp(dir / name));
    all.insert(all.end(), ids.begin(), ids.end());
  }
  PrepareOptions o;
  o.format = "llmc";
  o.shard_tokens = 7;
  o.shard_name = "tiny";
  const DatasetMeta m = prepare_dataset({dir / "a.txt", dir / "b.txt"}, dir / "s", o);
  const int64_t n = static_cast<int64_t>(all.size());
  EXPECT_EQ(m.shards, (n + 6) / 7);
  EXPECT_EQ(m.val_tokens, 7);
  EXPECT_EQ(m.train_tokens, n - 7);
  std::vector<int32_t> read;
  for (int64_t i = 0; i < m.shards; ++i) {
    const std::string path = dir / "s/" + shard_name("tiny", i == 0 ? "val" : "train", i);
    const auto ids = shard_ids(path);
    EXPECT_EQ(static_cast<int64_t>(ids.size()), i + 1 < m.shards ? 7 : n - 7 * (m.shards - 1)) << path;
    read.insert(read.end(), ids.begin(), ids.end());
  }
  EXPECT_EQ(read, all);
  EXPECT_EQ(read_dataset_meta(dir / "s").format, "llmc");
  o.shard_tokens = 1000000;
  EXPECT_THROW(prepare_dataset({dir / "a.txt"}, dir / "s", o), InputError);  // all of it is val
  EXPECT_TRUE(std::filesystem::exists(dir / "s/" + shard_name("tiny", "train", 2)));  // untouched
  o.shard_tokens = 12;
  EXPECT_EQ(prepare_dataset({dir / "a.txt", dir / "b.txt"}, dir / "s", o).shards, (n + 11) / 12);
  EXPECT_FALSE(std::filesystem::exists(dir / "s/" + shard_name("tiny", "train", (n + 11) / 12)));
}

// A shard set and its meta.json are one unit: a preparation that fails after
// some shards are written leaves the old set whole and no temporary, and a
// shard that does not belong (copied in, or left by another preparation) is
// refused by name when the folder is opened.
TEST(Prepare, LlmcShardsAreOneUnitWithTheirMetaJson) {
  testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 40; ++i) text += "Words of a document, line " + std::to_string(i) + ".\n";
  std::ofstream(dir / "a.txt") << text;
  PrepareOptions o;
  o.format = "llmc";
  o.shard_tokens = 64;
  o.shard_name = "u";
  const DatasetMeta first = prepare_dataset({dir / "a.txt"}, dir / "s", o);
  ASSERT_GE(first.shards, 4);
  std::map<std::string, std::string> before;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "s")) {
    before[entry.path().filename().string()] = slurp(entry.path().string());
  }

  // Fail the third shard's sync: two new shards are staged by then.
  o.shard_tokens = 48;
  int synced = 0;
  detail::atomic_write_fault = [&](std::string_view step) {
    if (step == "synced" && ++synced == 3) throw std::runtime_error("injected: disk gone");
  };
  EXPECT_THROW(prepare_dataset({dir / "a.txt"}, dir / "s", o), FileError);
  detail::atomic_write_fault = nullptr;
  std::map<std::string, std::string> after;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "s")) {
    after[entry.path().filename().string()] = slurp(entry.path().string());
  }
  EXPECT_EQ(after, before) << "the old set changed, or a temporary was left";
  EXPECT_NO_THROW(open_batch_sources(dir / "s", 1, 8, 50257, 1, 2, 3));

  // A shard beyond meta.json's count: refused, naming the folder and counts.
  std::filesystem::copy_file(dir / "s/" + shard_name("u", "train", 1),
                             dir / "s/" + shard_name("u", "train", first.shards));
  const std::string why =
      testing::file_error_of([&] { open_batch_sources(dir / "s", 1, 8, 50257, 1, 2, 3); });
  EXPECT_NE(why.find("do not belong with its meta.json: " + std::to_string(first.shards + 1) +
                     " shards"), std::string::npos) << why;
}

TEST(Prepare, FolderInputIsItsFilesInNameOrder) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir / "in");
  std::ofstream(dir / "in/2.txt") << "second second second";
  std::ofstream(dir / "in/1.txt") << "first first first";
  std::ofstream(dir / "in/.hidden") << "never";
  PrepareOptions o;
  o.format = "llmc";
  o.shard_tokens = 3;
  prepare_dataset({dir / "in"}, dir / "a", o);
  prepare_dataset({dir / "in/1.txt", dir / "in/2.txt"}, dir / "b", o);
  for (int64_t i = 0;; ++i) {
    const std::string name = shard_name("a", i == 0 ? "val" : "train", i);
    if (!std::filesystem::exists(dir / "a/" + name)) break;
    EXPECT_EQ(slurp(dir / "a/" + name), slurp(dir / "b/" + shard_name("b", i == 0 ? "val" : "train", i)));
  }
}

}  // namespace
}  // namespace gpt2
