// libFuzzer target: the checkpoint loader (LibTorch's zip and pickle reader,
// then gpt2's metadata, checksums and state-dict gate) on hostile bytes.
// Typed gpt2 errors are the expected outcome; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "gpt2/error.h"
#include "gpt2/io/detail/checkpoint_fields.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    gpt2::detail::load_checkpoint("fuzz", &in);
  } catch (const gpt2::Error&) {
  }
  return 0;
}
