// libFuzzer target: the nanoGPT ckpt.pt reader (the gate's torch.save
// layout and pickle dialect, then model_args, the state-dict checks and
// nanoGPT's AdamW state by name) on hostile bytes. Typed gpt2 errors are the
// expected outcome; anything else is a bug. GPT2_FUZZ_VERBOSE=1 prints each
// typed error (for reading a corpus).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "gpt2/error.h"
#include "gpt2/io/nanogpt.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    gpt2::load_nanogpt_bytes({reinterpret_cast<const char*>(data), size}, "fuzz",
                             gpt2::NanoGPTReadOptions().optimizer(true));
  } catch (const gpt2::Error& e) {
    if (std::getenv("GPT2_FUZZ_VERBOSE")) std::fprintf(stderr, "typed error: %s\n", e.what());
  }
  return 0;
}
