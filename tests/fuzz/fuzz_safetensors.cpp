// libFuzzer target: the safetensors reader and the Hugging Face import on
// hostile bytes. Typed gpt2 errors are the expected outcome; any other
// exception, crash, leak or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpt2/error.h"
#include "gpt2/io/hf_gpt2.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto contents =
        gpt2::parse_safetensors(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    // n_head 1 divides every width, so the import goes as far as it can.
    gpt2::model_from_safetensors(contents, "", gpt2::HfReadOptions().n_head(1), "fuzz");
  } catch (const gpt2::Error&) {
  }
  return 0;
}
