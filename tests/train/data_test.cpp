// Prepared data, the token loader, the schedule and the CSV log.

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "gpt2/error.h"
#include "gpt2/text/char_tokenizer.h"
#include "gpt2/train/data/data_folder.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/train_options.h"
#include "gpt2/train/token_loader.h"
#include "gpt2/train/train_log.h"
#include "test_util.h"

namespace gpt2 {
namespace {

TEST(CharTokenizer, AlphabetIsSortedDistinctCharactersAndRoundTrips) {
  const CharTokenizer t = CharTokenizer::from_text("hello, wörld\n");
  EXPECT_EQ(t.alphabet(), "\n ,dehlorwö");
  EXPECT_EQ(t.vocab_size(), 11);
  const auto ids = t.encode("wörld");
  EXPECT_EQ(ids, (std::vector<int32_t>{9, 10, 8, 6, 3}));
  EXPECT_EQ(t.decode(ids), "wörld");
  EXPECT_EQ(CharTokenizer::from_alphabet(t.alphabet()).encode("hello"), t.encode("hello"));
}

TEST(CharTokenizer, UnknownCharacterBadIdAndBadUtf8AreNamed) {
  const CharTokenizer t = CharTokenizer::from_text("abc");
  EXPECT_THROW(
      try { t.encode("abz"); } catch (const InputError& e) {
        EXPECT_STREQ(e.what(), "character 'z' (U+007A) at byte offset 2 is not in the alphabet of 3 characters");
        throw;
      },
      InputError);
  EXPECT_THROW(t.decode({0, 3}), InputError);
  EXPECT_THROW(CharTokenizer::from_text("a\xff"), InputError);
  EXPECT_THROW(CharTokenizer::from_alphabet("aba"), InputError);
  EXPECT_THROW(CharTokenizer::from_text(""), InputError);
}

// nanoGPT's shakespeare_char/prepare.py prints: vocab size 65, train has
// 1,003,854 tokens, val has 111,540 tokens.
TEST(Dataset, ShippedCorpusCharSplitMatchesNanoGPT) {
  testing::TempDir dir;
  const DatasetMeta m = prepare_dataset({GPT2_SHAKESPEARE}, dir / "d", "char");
  EXPECT_EQ(m.vocab_size, 65);
  EXPECT_EQ(m.train_tokens, 1'003'854);
  EXPECT_EQ(m.val_tokens, 111'540);
  const DatasetMeta read = read_dataset_meta(dir / "d");
  EXPECT_EQ(read.alphabet, m.alphabet);
  EXPECT_EQ(TokenFile(dir / "d/train.bin").size(), 1'003'854);
  // The first line, "First Citizen:", through the file and the codec.
  const TokenFile f(dir / "d/train.bin");
  EXPECT_EQ(text_codec(read).decode(std::vector<int32_t>(f.data(), f.data() + 14)), "First Citizen:");
}

// train.bin, val.bin and meta.json are one unit: a split from another
// preparation (its count not meta.json's) is refused by name, not trained on.
TEST(Dataset, ASplitThatDoesNotMatchItsMetaIsRefused) {
  testing::TempDir dir;
  prepare_dataset({GPT2_SHAKESPEARE}, dir / "d", "char");
  EXPECT_NO_THROW(open_batch_sources(dir / "d", 2, 8, 65, 1, 2, 3));
  std::vector<uint16_t> ids(1000, 3);
  std::ofstream(dir / "d/val.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(ids.data()), 2000);
  const std::string why = testing::file_error_of([&] { open_batch_sources(dir / "d", 2, 8, 65, 1, 2, 3); });
  EXPECT_NE(why.find("/d/val.bin' does not belong with its meta.json: it holds 1000 tokens, "
                     "meta.json says 111540"),
            std::string::npos)
      << why;
}

// nanoGPT's own folders, as its prepare.py scripts leave them: meta.pkl
// beside the splits (shakespeare_char), or no meta at all (GPT-2 BPE ids:
// shakespeare, openwebtext). meta.json, when there, is the library's.
TEST(Dataset, NanoGPTsOwnFoldersReadWithoutMetaJson) {
  testing::TempDir dir;
  const DatasetMeta ours = prepare_dataset({GPT2_SHAKESPEARE}, dir / "d", "char");
  std::filesystem::remove(dir / "d/meta.json");  // what nanoGPT's prepare.py leaves
  const DatasetMeta pkl = read_dataset_meta(dir / "d");
  EXPECT_EQ(pkl.source, "meta.pkl");
  EXPECT_EQ(pkl.tokenizer, "char");
  EXPECT_EQ(pkl.alphabet, ours.alphabet);
  EXPECT_EQ(pkl.train_tokens, ours.train_tokens);
  EXPECT_EQ(pkl.val_tokens, ours.val_tokens);
  EXPECT_EQ(describe_dataset(pkl), "char tokenizer, 65 ids, from nanoGPT's meta.pkl");
  std::filesystem::remove(dir / "d/meta.pkl");
  const DatasetMeta none = read_dataset_meta(dir / "d");
  EXPECT_EQ(none.source, "none");
  EXPECT_EQ(none.tokenizer, "gpt2");
  EXPECT_EQ(none.vocab_size, 50257);
  EXPECT_EQ(none.train_tokens, ours.train_tokens);
  EXPECT_NO_THROW(open_batch_sources(dir / "d", 2, 8, 50257, 1, 2, 3));
  std::ofstream(dir / "d/val.bin", std::ios::binary | std::ios::app) << 'x';
  EXPECT_NE(testing::file_error_of([&] { read_dataset_meta(dir / "d"); })
                .find("val.bin' holds 223081 bytes, an odd count: not uint16 token ids"),
            std::string::npos);
  std::filesystem::remove(dir / "d/val.bin");
  EXPECT_NE(testing::file_error_of([&] { read_dataset_meta(dir / "d"); })
                .find("/d' holds train.bin but no val.bin"),
            std::string::npos);
}

// While prepare replaces a folder's splits, meta.json marks it unfinished:
// a prepare killed there leaves a folder refused by name, not one read as
// nanoGPT's GPT-2 ids (no meta) or under the old alphabet.
TEST(Dataset, AnUnfinishedPrepareIsRefusedByName) {
  testing::TempDir dir;
  prepare_dataset({GPT2_SHAKESPEARE}, dir / "d", "char");
  std::ofstream(dir / "d/meta.json") << unfinished_dataset_marker();
  EXPECT_NE(testing::file_error_of([&] { read_dataset_meta(dir / "d"); })
                .find("/d' was being prepared when its `gpt2 prepare` stopped: prepare it again"),
            std::string::npos);
  EXPECT_EQ(prepare_dataset({GPT2_SHAKESPEARE}, dir / "d", "char").vocab_size, 65);
  EXPECT_EQ(read_dataset_meta(dir / "d").source, "meta.json");
}

TEST(Dataset, EmptyInputAndTooShortSplitAreErrors) {
  testing::TempDir dir;
  std::ofstream(dir / "empty.txt").close();
  std::ofstream(dir / "short.txt") << "abcdefghij";
  EXPECT_THROW(prepare_dataset({dir / "empty.txt"}, dir / "d", "char"), InputError);
  try {
    prepare_dataset({dir / "short.txt"}, dir / "d", "char", 0.1);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the val split holds 1 tokens"), std::string::npos) << e.what();
  }
  EXPECT_THROW(prepare_dataset({dir / "short.txt"}, dir / "d", "bpe"), InputError);
  EXPECT_THROW(read_dataset_meta(dir / "nowhere"), FileError);
}

// y is x shifted by one position in the file; restoring the generator's
// state gives the same batches again.
TEST(TokenLoader, TargetsAreShiftedInputsAndStateRestoresTheStream) {
  testing::TempDir dir;
  std::vector<uint16_t> ids(100);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint16_t>(i * 7);
  std::ofstream(dir / "t.bin", std::ios::binary).write(reinterpret_cast<const char*>(ids.data()), 200);
  auto file = std::make_shared<const TokenFile>(dir / "t.bin");
  TokenLoader loader(file, 4, 8, 3);
  const Batch b = loader.next();
  EXPECT_EQ(b.x.sizes(), (std::vector<int64_t>{4, 8}));
  EXPECT_TRUE(torch::equal(b.y, b.x + 7));  // ids[i + 1] = ids[i] + 7
  EXPECT_LE(b.y.max().item<int64_t>(), 99 * 7);
  const torch::Tensor state = loader.rng_state();
  const torch::Tensor next = loader.next().x.clone();
  loader.set_rng_state(state);
  EXPECT_TRUE(torch::equal(loader.next().x, next));
  EXPECT_THROW(TokenLoader(file, 1, 100, 0), InputError);  // 100 tokens: no window of 100 + 1
  EXPECT_THROW(loader.set_rng_state(torch::zeros({3}, torch::kUInt8)), InputError);
}

// A train.bin cut short while a run reads it (another program writing the
// same folder in place): the next batch is a FileError naming the file and
// both sizes. Read through the map, the pages past the new end would fault
// (SIGBUS, the process gone).
TEST(TokenLoader, AFileCutShortUnderTheRunIsAFileErrorNotACrash) {
  testing::TempDir dir;
  std::vector<uint16_t> ids(100000, 5);
  std::ofstream(dir / "t.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(ids.data()), 200000);
  TokenLoader loader(std::make_shared<const TokenFile>(dir / "t.bin"), 8, 64, 1);
  EXPECT_EQ(loader.next().x.sum().item<int64_t>(), 8 * 64 * 5);
  std::filesystem::resize_file(dir / "t.bin", 100);
  std::string why;
  for (int i = 0; i < 20 && why.empty(); ++i) {  // the first row past 50 tokens fails
    try {
      loader.next();
    } catch (const FileError& e) {
      why = e.what();
    }
  }
  EXPECT_NE(why.find("token file '" + (dir / "t.bin") + "' was cut short while it was read: it "
                     "held 200000 bytes when opened, 100 now"),
            std::string::npos)
      << why;
}

TEST(TokenLoader, OddByteCountIsAFileError) {
  testing::TempDir dir;
  std::ofstream(dir / "odd.bin", std::ios::binary) << "abc";
  EXPECT_THROW(TokenFile(dir / "odd.bin"), FileError);
  EXPECT_THROW(TokenFile(dir / "missing.bin"), FileError);
}

// nanoGPT's get_lr at its landmarks.
TEST(LrSchedule, WarmupCosineAndFloorAsNanoGPT) {
  const LrSchedule s = LrSchedule().lr(1e-3).min_lr(1e-4).warmup_steps(10).decay_steps(110);
  EXPECT_DOUBLE_EQ(s.at(0), 1e-3 / 11);
  EXPECT_DOUBLE_EQ(s.at(9), 1e-3 * 10 / 11);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(60), 1e-4 + 0.5 * 9e-4);  // halfway: cos(pi / 2) = 0
  EXPECT_DOUBLE_EQ(s.at(110), 1e-4);
  EXPECT_DOUBLE_EQ(s.at(500), 1e-4);
}

// A resumed log keeps the rows up to the checkpoint's step and continues.
TEST(TrainLog, ResumeCutsRowsAfterTheCheckpointAndAppends) {
  testing::TempDir dir;
  {
    TrainLog log(dir / "log.csv");
    log.eval(0, 4.0);
    for (int64_t s = 1; s <= 4; ++s) log.step({s, 3.0, 1.0, 1e-3, s == 3, 10, 0.5});
  }
  {
    TrainLog log(dir / "log.csv", 2);
    log.step({3, 2.5, 1.0, 1e-3, false, 10, 0.5});
  }
  const auto rows = read_log(dir / "log.csv");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].split, "val");
  EXPECT_EQ(rows[3].step, 3);
  EXPECT_EQ(rows[3].loss, 2.5);
  EXPECT_EQ(rows[3].split, "train");
  EXPECT_TRUE(std::isnan(rows[0].lr));
}

}  // namespace
}  // namespace gpt2
