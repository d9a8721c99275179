// Token shards: llm.c's and numpy's files, damaged ones named, the
// contiguous loader with its per-epoch shuffle, and an exact resume across
// shard boundaries.

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <fstream>
#include <set>

#include "gpt2/error.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/train/data/data_folder.h"
#include "gpt2/train/data/shard_loader.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/trainer.h"
#include "test_util.h"

namespace gpt2 {
namespace {

// An llm.c shard written by hand: header ints, then the tokens.
void write_bin(const std::string& path, const std::vector<uint16_t>& tokens, int32_t magic = 20240520,
               int32_t version = 1, int64_t count = -1) {
  std::vector<int32_t> header(256, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = static_cast<int32_t>(count < 0 ? static_cast<int64_t>(tokens.size()) : count);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(header.data()), 1024);
  out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 2));
}

// A numpy .npy file as np.save writes a uint16 array (version 1, header
// padded to 64 bytes).
void write_npy(const std::string& path, const std::vector<uint16_t>& tokens, const std::string& dict = "") {
  std::string header = dict.empty() ? "{'descr': '<u2', 'fortran_order': False, 'shape': (" +
                                          std::to_string(tokens.size()) + ",), }"
                                    : dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out << "\x93NUMPY" << '\x01' << '\x00';
  out.put(static_cast<char>(header.size() & 0xFF)).put(static_cast<char>(header.size() >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 2));
}

void expect_named_error(const std::string& path, const std::string& fragment) {
  try {
    ShardFile f(path);
    FAIL() << path << " opened";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ShardFile, LlmcAndNpyShardsReadTheirTokens) {
  testing::TempDir dir;
  const std::vector<uint16_t> tokens = {5, 0, 65535, 7};
  write_bin(dir / "a.bin", tokens);
  write_npy(dir / "a.npy", tokens);
  for (const char* name : {"a.bin", "a.npy"}) {
    const ShardFile f(dir / name);
    EXPECT_EQ(std::vector<uint16_t>(f.data(), f.data() + f.size()), tokens) << name;
  }
}

TEST(ShardFile, DamagedShardsAreFormatErrorsNamingTheShard) {
  testing::TempDir dir;
  const std::vector<uint16_t> tokens(10, 1);
  write_bin(dir / "magic.bin", tokens, 20240326);
  expect_named_error(dir / "magic.bin", "magic 20240326 (expected 20240520");
  write_bin(dir / "version.bin", tokens, 20240520, 2);
  expect_named_error(dir / "version.bin", "version 2 (expected 1)");
  write_bin(dir / "count.bin", tokens, 20240520, 1, 11);
  expect_named_error(dir / "count.bin", "the header says 11 tokens (22 bytes), the file holds 20 bytes");
  std::ofstream(dir / "short.bin") << "abc";
  expect_named_error(dir / "short.bin", "shorter than the 1024-byte header");
  write_npy(dir / "dtype.npy", tokens, "{'descr': '<u4', 'fortran_order': False, 'shape': (5,), }");
  expect_named_error(dir / "dtype.npy", "dtype '<u4'");
  write_npy(dir / "dims.npy", tokens, "{'descr': '<u2', 'fortran_order': False, 'shape': (2, 5), }");
  expect_named_error(dir / "dims.npy", "lacks ')'");
  write_npy(dir / "key.npy", tokens, "{'descr': '<u2', 'fortran_order': False, 'shape': (10,), 'x': 1}");
  expect_named_error(dir / "key.npy", "unknown key 'x'");
  write_npy(dir / "length.npy", tokens, "{'descr': '<u2', 'fortran_order': False, 'shape': (9,), }");
  expect_named_error(dir / "length.npy", "the header says 9 tokens");
}

// Four shards of 3 windows each, every token its shard's number: each epoch
// visits every shard once, in an order of its own, the same for the same
// seed; skipping is reading without the copy, so ranks that skip each
// other's batches take disjoint windows.
TEST(ShardLoader, EpochsVisitEveryShardOnceInAShuffledOrder) {
  testing::TempDir dir;
  std::vector<std::shared_ptr<const ShardFile>> shards;
  for (uint16_t s = 0; s < 4; ++s) {
    std::vector<uint16_t> tokens(3 * 8 + 1);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>(s * 100 + i);
    write_bin(dir / ("x_train_00000" + std::to_string(s) + ".bin"), tokens);
    shards.push_back(std::make_shared<const ShardFile>(dir / ("x_train_00000" + std::to_string(s) + ".bin")));
  }
  ShardLoader a(shards, 2, 4, 3, true, 1000), b(shards, 2, 4, 3, true, 1000);
  std::vector<std::vector<int64_t>> epochs(5);
  for (int i = 0; i < 5 * 12; ++i) {
    const Batch batch = a.next();
    EXPECT_TRUE(torch::equal(batch.x.flatten().slice(0, 1), batch.y.flatten().slice(0, 0, 7)));
    const int64_t first = batch.x[0][0].item<int64_t>();
    if (first % 100 == 0) epochs[static_cast<size_t>(i / 12)].push_back(first / 100);
    EXPECT_EQ(first % 100, (i % 3) * 8) << "contiguous windows advancing by B * T";
    const Batch c = (i % 2 == 0) ? b.next() : (b.skip(1), Batch{});
    if (i % 2 == 0) {
      EXPECT_TRUE(torch::equal(c.x, batch.x)) << "same seed, same stream";
    }
  }
  std::set<std::vector<int64_t>> orders;
  for (const auto& order : epochs) {
    EXPECT_EQ(std::set<int64_t>(order.begin(), order.end()).size(), 4u);
    orders.insert(order);
  }
  EXPECT_GT(orders.size(), 1u) << "the order is drawn per epoch";
  EXPECT_EQ(a.epoch(), 4);
}

TEST(ShardLoader, IdsBeyondTheVocabularyNameTheShard) {
  testing::TempDir dir;
  write_bin(dir / "big_train_000001.bin", std::vector<uint16_t>(20, 70));
  ShardLoader loader({std::make_shared<const ShardFile>(dir / "big_train_000001.bin")}, 1, 4, 1, true, 65);
  try {
    loader.next();
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("big_train_000001.bin': id 70 at token 0 is outside the "
                                         "vocabulary [0, 65)"), std::string::npos) << e.what();
  }
}

// A run over llm.c shards written by prepare: 12 batches of 3 x 16 tokens
// through train shards of 150, 150 and 140 tokens (3, 3 and 2 windows) cross
// shard boundaries and an epoch; 5 steps (mid-shard), checkpoint, a new
// trainer, 7 more give the same losses bit for bit.
TEST(ShardLoader, ResumeAcrossShardBoundariesGivesTheSameLosses) {
  testing::TempDir dir;
  {
    std::ofstream text(dir / "text.txt");
    for (int i = 0; i < 10; ++i) text << "Line " << i << ": You are all resolved rather to die than to famish?\n";
  }
  PrepareOptions o;
  o.tokenizer = "char";
  o.format = "llmc";
  o.shard_tokens = 150;
  const DatasetMeta meta = prepare_dataset({dir / "text.txt"}, dir / "data", o);
  ASSERT_EQ(meta.shards, 4);
  EXPECT_EQ(data_layout(dir / "data"), DataLayout::kShards);
  const auto model = [&] { return GPT(testing::tiny_config().vocab_size(meta.vocab_size).dropout(0.1).init(InitOptions().seed(7))); };
  const auto options = TrainOptions().batch_size(3).grad_accum(1).max_steps(12).warmup_steps(2).lr(3e-3)
      .min_lr(3e-4).eval_interval(2).eval_steps(2).checkpoint_interval(0).seed(11);
  Trainer one(model(), options, dir / "data");
  std::vector<double> losses;
  for (int i = 0; i < 12; ++i) losses.push_back(one.step().loss);
  Trainer first(model(), options, dir / "data");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(first.step().loss, losses[static_cast<size_t>(i)]);
  first.evaluate("val");
  first.save(dir / "ckpt.pt");
  Checkpoint c = load_checkpoint(dir / "ckpt.pt");
  Trainer second(c.model, parse_train_record(c, "ckpt").options, dir / "data");
  second.restore(c, dir / "ckpt.pt");
  for (int i = 5; i < 12; ++i) EXPECT_EQ(second.step().loss, losses[static_cast<size_t>(i)]) << "step " << i + 1;
  EXPECT_TRUE(std::isfinite(second.evaluate("val")));
}

}  // namespace
}  // namespace gpt2
