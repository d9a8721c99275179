// llm.c model files: both versions, padding, the header's rules each broken
// once, all-or-nothing loads.
#include "gpt2/io/llmc.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "gpt2/io/checkpoint.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace gpt2 {
namespace {

int32_t header_field(const std::string& bytes, int i) {
  int32_t v = 0;
  std::memcpy(&v, bytes.data() + 4 * i, 4);
  return v;
}

std::string with_field(std::string bytes, int i, int32_t v) {
  std::memcpy(bytes.data() + 4 * i, &v, 4);
  return bytes;
}

TEST(LlmcFile, HeaderAndPaddedVocabularyAreLlmcs) {
  GPT model(testing::tiny_config().init(InitOptions().seed(1)));  // vocab 96 -> 128 rows
  const std::string bytes = llmc_bytes(*model);
  const int32_t want[] = {20240326, 3, 16, 96, 2, 4, 32, 128};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(header_field(bytes, i), want[i]) << "field " << i;
  EXPECT_EQ(bytes.size(), 1024 + 4 * (model->num_parameters() + (128 - 96) * 32));
  // The padding rows follow wte's 96 real rows and are zeros.
  const auto* wte = reinterpret_cast<const float*>(bytes.data() + 1024);
  for (int64_t i = 96 * 32; i < 128 * 32; ++i) ASSERT_EQ(wte[i], 0.0f) << i;
  EXPECT_EQ(wte[95 * 32 + 31], model->transformer->wte->weight[95][31].item<float>());
  EXPECT_EQ(header_field(llmc_bytes(*model, LlmcDtype::kBFloat16), 1), 5);
}

TEST(LlmcFile, CheckpointToLlmcToCheckpointIsBitExactWithEqualLogits) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().init(InitOptions().seed(2)));
  save_checkpoint(dir / "a.pt", *model);
  save_llmc(dir / "a.bin", *load_checkpoint(dir / "a.pt").model);
  save_checkpoint(dir / "b.pt", *load_llmc(dir / "a.bin"));
  auto back = load_checkpoint(dir / "b.pt").model;
  EXPECT_TRUE(testing::same_tensors(*back, testing::snapshot(*model)));
  EXPECT_EQ(back->lm_head->weight.data_ptr(), back->transformer->wte->weight.data_ptr());
  const auto idx = torch::randint(96, {2, 16});
  model->eval();
  back->eval();
  EXPECT_TRUE(torch::equal(model(idx).logits, back(idx).logits));
}

// Version 5 stores bfloat16: each value is the float32 one rounded to
// bfloat16 by torch (round to nearest even), and reads back as exactly that.
TEST(LlmcFile, Bfloat16VersionHoldsEachValueRoundedToBfloat16) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().init(InitOptions().seed(3)));
  save_llmc(dir / "bf16.bin", *model, LlmcDtype::kBFloat16);
  GPT back = load_llmc(dir / "bf16.bin");
  for (const auto& item : model->named_parameters()) {
    EXPECT_TRUE(torch::equal(back->named_parameters()[item.key()],
                             item.value().to(torch::kBFloat16).to(torch::kFloat))) << item.key();
  }
}

TEST(LlmcFile, EveryBrokenRuleIsAFormatErrorNamingTheFileAndTheRule) {
  testing::TempDir dir;
  const std::string good = llmc_bytes(*GPT(testing::tiny_config()));
  const struct {
    const char* rule;
    std::string bytes;
    const char* message;
  } broken[] = {
      {"shorter than the header", good.substr(0, 1000), "1000 bytes, shorter than the 1024-byte header"},
      {"magic", with_field(good, 0, 20240327), "magic 20240327, expected 20240326"},
      {"version", with_field(good, 1, 4), "version 4, expected 3 (float32) or 5 (bfloat16)"},
      {"max_seq_len", with_field(good, 2, 0), "header max_seq_len is 0, must be positive"},
      {"vocab_size", with_field(good, 3, -1), "header vocab_size is -1, must be positive"},
      {"n_layer", with_field(good, 4, 0), "header n_layer is 0, must be positive"},
      {"n_head", with_field(good, 5, 0), "header n_head is 0, must be positive"},
      {"n_embd", with_field(good, 6, 0), "header n_embd is 0, must be positive"},
      {"padded_vocab_size", with_field(good, 7, 95), "padded_vocab_size 95 is smaller than vocab_size 96"},
      {"truncated", good.substr(0, good.size() - 1), "the file holds"},
      {"trailing bytes", good + "x", "the file holds"},
      {"version 5 sizes on version 3 data", with_field(good, 1, 5), "(2 bytes each)"},
      {"sizes overflow", with_field(with_field(good, 4, INT32_MAX), 6, INT32_MAX), "the tensor sizes overflow"},
  };
  for (const auto& b : broken) {
    testing::write_file(dir / "broken.bin", b.bytes);
    const std::string what = testing::format_error_of([&] { load_llmc(dir / "broken.bin"); });
    EXPECT_NE(what.find(dir / "broken.bin"), std::string::npos) << b.rule << ": " << what;
    EXPECT_NE(what.find(b.message), std::string::npos) << b.rule << ": " << what;
  }
}

// 2,000 one-wide layers in an 0.2 MB file whose size matches its header:
// refused at once, before a model is built (the writer's cost is quadratic
// in the depth), naming the bound.
TEST(LlmcFile, AFileOfThousandsOfLayersIsRefusedBeforeAnythingIsBuilt) {
  testing::TempDir dir;
  const int32_t layers = 2000;
  std::vector<int32_t> header(256, 0);
  header[0] = 20240326, header[1] = 3, header[2] = 1, header[3] = 1, header[4] = layers;
  header[5] = 1, header[6] = 1, header[7] = 1;
  // wte, wpe, 25 values per one-wide layer, ln_f.
  const std::vector<float> values(1 + 1 + 25 * layers + 2, 0.01f);
  std::string bytes(reinterpret_cast<const char*>(header.data()), 1024);
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  testing::write_file(dir / "deep.bin", bytes);
  const auto start = std::chrono::steady_clock::now();
  try {
    load_llmc(dir / "deep.bin");
    FAIL() << "no error";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("n_layer must be at most 1024"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(LlmcFile, AHeadCountThatDoesNotDivideTheWidthIsACheckpointError) {
  testing::TempDir dir;
  testing::write_file(dir / "m.bin", with_field(llmc_bytes(*GPT(testing::tiny_config())), 5, 5));
  try {
    load_llmc(dir / "m.bin");
    FAIL() << "no error";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("n_embd 32 is not divisible by n_head 5"), std::string::npos) << e.what();
  }
}

TEST(LlmcFile, AFailedLoadLeavesTheModelBitIdentical) {
  testing::TempDir dir;
  save_llmc(dir / "wide.bin", *GPT(testing::tiny_config().n_embd(64)));
  GPT model(testing::tiny_config().init(InitOptions().seed(4)));
  const auto before = testing::snapshot(*model);
  const std::string what = testing::file_error_of([&] { load_llmc(dir / "wide.bin", *model); });
  EXPECT_NE(what.find("size mismatch for transformer.wte.weight: file [96, 64], model [96, 32]"),
            std::string::npos) << what;
  EXPECT_TRUE(testing::same_tensors(*model, before));
}

TEST(LlmcFile, WriterRefusesWhatLlmcCannotHold) {
  for (const auto& config : {testing::tiny_config().bias(false), testing::tiny_config().gelu(Gelu::kExact)}) {
    const std::string what = testing::format_error_of([&] { llmc_bytes(*GPT(config)); });
    EXPECT_NE(what.find("an llm.c file holds a GPT-2 with biases and tanh GELU"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace gpt2
