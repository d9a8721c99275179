// Checkpoint integrity: a CRC-32 per tensor, verified at load.
#include "gpt2/io/checksum.h"

#include <gtest/gtest.h>
#include <torch/serialize/output-archive.h>

#include "gpt2/fields/table.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/io/checkpoint/checkpoint_fields.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace gpt2 {
namespace {

// zlib's crc32 of "123456789" is the CRC-32 check value 0xCBF43926.
TEST(Checksum, IsTheStandardCrc32OfTheTensorsBytes) {
  const std::string text = "123456789";
  auto t = torch::empty({9}, torch::kUInt8);
  std::memcpy(t.data_ptr(), text.data(), 9);
  EXPECT_EQ(tensor_crc32(t), 0xCBF43926u);
  EXPECT_EQ(tensor_crc32(torch::arange(6.0f).view({2, 3}).t()),
            tensor_crc32(torch::arange(6.0f).view({2, 3}).t().contiguous()));
}

TEST(Checksum, AFlippedByteInTensorDataIsAnErrorNamingTheTensor) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().init(InitOptions().seed(1)));
  save_checkpoint(dir / "m.pt", *model);
  std::string bytes = testing::read_file(dir / "m.pt");
  // Find ln_f.bias's bytes (zeros are everywhere; use a tensor of distinct
  // values) and flip one bit of its third value.
  const auto& wpe = model->transformer->wpe->weight;
  const std::string needle(static_cast<const char*>(wpe.data_ptr()), wpe.nbytes());
  const size_t at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(needle, at + 1), std::string::npos);
  bytes[at + 9] ^= 0x10;
  testing::write_file(dir / "flipped.pt", bytes);
  const auto before = testing::snapshot(*model);
  const std::string what = testing::file_error_of([&] { load_weights(dir / "flipped.pt", *model); });
  EXPECT_NE(what.find("checksum mismatch for transformer.wpe.weight"), std::string::npos) << what;
  EXPECT_NE(what.find(dir / "flipped.pt"), std::string::npos) << what;
  EXPECT_EQ(what.find("transformer.wte.weight"), std::string::npos) << "only the flipped tensor: " << what;
  EXPECT_TRUE(testing::same_tensors(*model, before));
  EXPECT_THROW(load_checkpoint(dir / "flipped.pt"), CheckpointError);
}

// A checkpoint's per-tensor CRC-32s are compared with the one its read took
// of each record's bytes: a changed byte whose zip CRC-32 was rewritten to
// match is still a mismatch naming the tensor.
TEST(Checksum, AChangedByteWithItsZipCrcRewrittenIsStillNamed) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().init(InitOptions().seed(3)));
  save_checkpoint(dir / "m.pt", *model);
  testing::Records records = testing::records_of(testing::read_file(dir / "m.pt"));
  testing::write_file(dir / "rezipped.pt", testing::zip_of(records));
  ASSERT_NO_THROW(load_weights(dir / "rezipped.pt", *model)) << "the rewritten zip itself loads";
  const auto& wpe = model->transformer->wpe->weight;
  const std::string needle(static_cast<const char*>(wpe.data_ptr()), wpe.nbytes());
  int changed = 0;
  for (auto& [name, data] : records) {
    if (data == needle) data[9] ^= 0x10, ++changed;
  }
  ASSERT_EQ(changed, 1);
  testing::write_file(dir / "changed.pt", testing::zip_of(records));  // every zip CRC-32 matches
  const auto before = testing::snapshot(*model);
  const std::string what = testing::file_error_of([&] { load_weights(dir / "changed.pt", *model); });
  EXPECT_NE(what.find("checksum mismatch for transformer.wpe.weight"), std::string::npos) << what;
  EXPECT_EQ(what.find("transformer.wte.weight"), std::string::npos) << what;
  EXPECT_TRUE(testing::same_tensors(*model, before));
}

// The layout checkpoints had before checksums: format 1, the config and
// step, no tensor_crc32.
TEST(Checksum, ACheckpointWithoutChecksumsLoadsWithANote) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().init(InitOptions().seed(2)));
  {
    torch::serialize::OutputArchive archive, meta;
    model->save(archive);
    meta.write("format_version", int64_t{1});
    detail::write_fields(meta, stored_fields(model->config));
    meta.write("step", int64_t{7});
    archive.write("gpt2", meta);
    archive.save_to(dir / "old.pt");
  }
  const Checkpoint c = load_checkpoint(dir / "old.pt");
  EXPECT_TRUE(testing::same_tensors(*c.model, testing::snapshot(*model)));
  EXPECT_EQ(c.step, 7);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("has no tensor checksums"), std::string::npos) << c.notes[0];
  save_checkpoint(dir / "new.pt", *model);
  EXPECT_TRUE(load_checkpoint(dir / "new.pt").notes.empty());
}

}  // namespace
}  // namespace gpt2
