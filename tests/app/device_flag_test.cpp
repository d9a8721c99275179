// --device and --dtype as the commands read them (apps/gpt2/common/model_flags.h).
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <string>

#include "apps/gpt2/common/model_flags.h"
#include "gpt2/error.h"
#include "test_util.h"

namespace gpt2::app {
namespace {

TEST(DeviceFlag, NamesAreCheckedAndGpusCounted) {
  EXPECT_TRUE(device_from_flag("cpu").is_cpu());
  for (const std::string bad : {"gpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cuda:0:1", "cpu:0", ""}) {
    const std::string e = testing::error_of<ConfigError>([&] { device_from_flag(bad); });
    EXPECT_NE(e.find("'" + bad + "' is not cpu, cuda or cuda:N"), std::string::npos) << e;
  }
  const auto gpus = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  if (gpus == 0) {  // a CPU-only LibTorch or machine: named, not a crash inside torch
    const std::string e = testing::error_of<ConfigError>([] { device_from_flag("cuda"); });
    EXPECT_NE(e.find("--device cuda: this LibTorch"), std::string::npos) << e;
    EXPECT_NE(e.find("sees no CUDA GPU"), std::string::npos) << e;
  } else {
    EXPECT_EQ(device_from_flag("cuda"), torch::Device(torch::kCUDA, 0));
    const std::string past = "cuda:" + std::to_string(gpus);
    const std::string e = testing::error_of<ConfigError>([&] { device_from_flag(past); });
    EXPECT_NE(e.find("this machine has " + std::to_string(gpus) + " CUDA GPU"), std::string::npos) << e;
  }
  EXPECT_TRUE(device_for("cpu", "int8").is_cpu());
  // Packed weights off the CPU are refused before the GPU is looked for.
  const std::string packed = testing::error_of<ConfigError>([] { device_for("cuda:1", "bf16"); });
  EXPECT_NE(packed.find("--weights bf16 packs the weights for the CPU's decoding; on --device "
                        "cuda:1"), std::string::npos) << packed;
  EXPECT_EQ(testing::error_of<ConfigError>([] { refuse_packed_weights_off_cpu("cuda", "fp32"); }),
            "no error");
}

// Decoding's --dtype: half dtypes are a GPU's; the CPU's are --weights.
TEST(DecodeDtypeFlag, HalfDtypesOnlyOffTheCpu) {
  EXPECT_EQ(decode_dtype_for("cpu", "float32"), torch::kFloat);
  EXPECT_EQ(decode_dtype_for("cuda", "float32"), torch::kFloat);
  EXPECT_EQ(decode_dtype_for("cuda", "bfloat16"), torch::kBFloat16);
  EXPECT_EQ(decode_dtype_for("cuda:1", "float16"), torch::kHalf);
  for (const std::string half : {"bfloat16", "float16"}) {
    const std::string e = testing::error_of<ConfigError>([&] { decode_dtype_for("cpu", half); });
    EXPECT_NE(e.find("--dtype " + half + " casts the weights for a GPU's decoding; on --device cpu "
                     "use --weights bf16 or int8"), std::string::npos) << e;
  }
  const std::string e = testing::error_of<ConfigError>([] { decode_dtype_for("cuda", "fp16"); });
  EXPECT_NE(e.find("'fp16' is not float32, bfloat16 or float16"), std::string::npos) << e;
}

TEST(DtypeFlag, FloatAndBfloat16Only) {
  EXPECT_EQ(dtype_from_flag("float32"), torch::kFloat);
  EXPECT_EQ(dtype_from_flag("bfloat16"), torch::kBFloat16);
  const std::string e = testing::error_of<ConfigError>([] { dtype_from_flag("float16"); });
  EXPECT_NE(e.find("'float16' is not float32 or bfloat16"), std::string::npos) << e;
}

}  // namespace
}  // namespace gpt2::app
