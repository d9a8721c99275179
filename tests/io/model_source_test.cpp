// load_model: one entry point for the three formats; `gpt2 convert`.
#include "gpt2/io/model_source.h"

#include <gtest/gtest.h>

#include <sstream>

#include "apps/gpt2/convert_command.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/io/hf_gpt2.h"
#include "gpt2/io/llmc.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace gpt2 {
namespace {

TEST(ModelSource, FormatIsToldByTheNameThenByTheFirstBytes) {
  testing::TempDir dir;
  EXPECT_EQ(detect_model_format(dir / "x.safetensors"), ModelFormat::kSafetensors);
  EXPECT_EQ(detect_model_format(dir / "x.bin"), ModelFormat::kLlmc);
  EXPECT_EQ(detect_model_format(dir / "x.pt"), ModelFormat::kCheckpoint);
  EXPECT_EQ(detect_model_format(dir / ""), ModelFormat::kSafetensors) << "a folder";
  EXPECT_THROW(detect_model_format(dir / "unnamed"), FileError);
  GPT model(testing::tiny_config());
  save_model(dir / "a.pt", *model);
  save_model(dir / "a.bin", *model);
  save_model(dir / "a.safetensors", *model);
  for (const auto& [file, format] : {std::pair{"a.pt", ModelFormat::kCheckpoint},
                                     {"a.bin", ModelFormat::kLlmc},
                                     {"a.safetensors", ModelFormat::kSafetensors}}) {
    std::filesystem::copy_file(dir / file, dir / "unnamed");
    EXPECT_EQ(detect_model_format(dir / "unnamed"), format) << file;
    std::filesystem::remove(dir / "unnamed");
  }
  EXPECT_EQ(model_format_from_string("llmc"), ModelFormat::kLlmc);
  EXPECT_THROW(model_format_from_string("gguf"), ConfigError);
}

TEST(ModelSource, LoadModelReadsEveryFormatToTheSameTensors) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().init(InitOptions().seed(1)));
  const auto want = testing::snapshot(*model);
  for (const char* name : {"m.pt", "m.bin", "m.safetensors", "folder/"}) {
    save_model(dir / name, *model);
    EXPECT_TRUE(testing::same_tensors(*load_model(dir / name), want)) << name;
  }
  save_model(dir / "any", *model, ModelSaveOptions().format(ModelFormat::kLlmc));
  EXPECT_TRUE(testing::same_tensors(*load_model(dir / "any", ModelSourceOptions().format(ModelFormat::kLlmc)), want));
}

TEST(ConvertCommand, ConvertsBetweenEveryPairOfFormatsBitExactly) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().init(InitOptions().seed(2)));
  save_checkpoint(dir / "start.pt", *model);
  const auto want = testing::snapshot(*model);
  std::string last = dir / "start.pt";
  for (const char* next : {"one.safetensors", "two.bin", "three/", "four.pt", "five.bin", "six.safetensors", "seven.pt"}) {
    app::ConvertFlags flags;
    flags.in = last;
    flags.out = dir / next;
    std::ostringstream out;
    EXPECT_EQ(app::run_convert(flags, out), 0);
    EXPECT_NE(out.str().find("wrote     " + flags.out), std::string::npos) << out.str();
    EXPECT_TRUE(testing::same_tensors(*load_model(flags.out), want)) << next;
    last = flags.out;
  }
}

TEST(ConvertCommand, FromAndToOverrideTheNamesAndBf16WritesVersion5) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().init(InitOptions().seed(3)));
  save_llmc(dir / "weights.dat", *model);
  app::ConvertFlags flags;
  flags.in = dir / "weights.dat";
  flags.from = "llmc";
  flags.out = dir / "out.dat";
  flags.to = "llmc";
  flags.bf16 = true;
  std::ostringstream out;
  app::run_convert(flags, out);
  EXPECT_NE(out.str().find("(llmc, bfloat16)"), std::string::npos) << out.str();
  EXPECT_EQ(testing::read_file(dir / "out.dat").substr(4, 1), std::string(1, '\x05'));
}

}  // namespace
}  // namespace gpt2
