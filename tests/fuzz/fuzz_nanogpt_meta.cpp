// libFuzzer target: nanoGPT's meta.pkl (the pickle gate's plain-data
// dialect, then the vocabulary's checks) on hostile bytes. Typed gpt2
// errors are the expected outcome; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpt2/error.h"
#include "gpt2/io/nanogpt_meta.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    gpt2::parse_nanogpt_meta(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const gpt2::Error&) {
  }
  return 0;
}
