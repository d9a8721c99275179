// libFuzzer target: the checkpoint loader (gpt2's own zip, pickle and code
// gate, then its metadata, checksums and state-dict checks) on hostile bytes.
// Typed gpt2 errors are the expected outcome; anything else is a bug.
// GPT2_FUZZ_VERBOSE=1 prints each typed error (for reading a corpus).
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstdint>

#include "gpt2/error.h"
#include "gpt2/io/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    gpt2::load_checkpoint_bytes({reinterpret_cast<const char*>(data), size}, "fuzz");
  } catch (const gpt2::Error& e) {
    if (std::getenv("GPT2_FUZZ_VERBOSE")) std::fprintf(stderr, "typed error: %s\n", e.what());
  }
  return 0;
}
