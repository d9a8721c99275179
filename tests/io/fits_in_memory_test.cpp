#include "gpt2/io/model_source.h"

#include <gtest/gtest.h>

#include <string>

#include "gpt2/error.h"

namespace gpt2 {
namespace {

// 10 million layers of GPT-2 width: 283 PB of float32, refused by the memory
// check (a ConfigError naming the bytes), not by the OOM killer. GPT's
// constructor does not check: the loaders and the command do.
TEST(FitsInMemory, AModelLargerThanMemoryIsANamedConfigError) {
  const GPTConfig deep = GPTConfig().n_layer(10'000'000);
  try {
    check_fits_in_memory(deep);
    FAIL() << "a 10M-layer model was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("this process may use"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(check_fits_in_memory(GPTConfig()));  // 124M fits anywhere this runs
}

}  // namespace
}  // namespace gpt2
