#include "apps/gpt2/train/closing_sample.h"

#include <fmt/format.h>

#include <cstdio>
#include <vector>

#include "gpt2/generate/generate.h"

namespace gpt2::app {

void print_closing_sample(GPTImpl& model, const DatasetMeta& meta, int64_t tokens, uint64_t seed,
                          const std::atomic<bool>& stop, const std::string& checkpoint) {
  const TextCodec codec = text_codec(meta);
  const auto options =
      SamplingOptions().max_new_tokens(tokens).temperature(0.8).top_k(200).seed(seed);
  fmt::print("sample    {} tokens, temperature 0.8, top-k 200, from \"{}\":\n", tokens,
             meta.tokenizer == "char" ? "\\n" : "<|endoftext|>");
  const bool stream = meta.tokenizer == "char";
  // The callback cannot end generate() early, so a stop throws out of it.
  struct Stopped {};
  std::vector<int32_t> ids;
  try {
    generate(model, {{codec.start_token}}, options, [&](size_t, int64_t id) {
      if (stop.load()) throw Stopped{};
      ids.push_back(static_cast<int32_t>(id));
      if (stream) fmt::print("{}", codec.decode({static_cast<int32_t>(id)}));
      std::fflush(stdout);
    });
  } catch (const Stopped&) {
    if (!stream) fmt::print("{}", codec.decode(ids));
    fmt::print("\nstopped   by a signal during the sample; checkpoint {} is whole\n", checkpoint);
    return;
  }
  if (!stream) fmt::print("{}", codec.decode(ids));
  fmt::print("\n");
}

}  // namespace gpt2::app
