// libFuzzer target: the llm.c reader and import on hostile bytes. Typed
// gpt2 errors are the expected outcome; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpt2/error.h"
#include "gpt2/io/llmc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto contents =
        gpt2::parse_llmc(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    gpt2::model_from_llmc(contents, "fuzz");
  } catch (const gpt2::Error&) {
  }
  return 0;
}
