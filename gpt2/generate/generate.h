#pragma once
/// Text generation from a GPT: prompts in, sampled continuations out, with
/// a KV cache so that each new token costs one position, not the context.

#include <cstdint>
#include <functional>
#include <vector>

#include "gpt2/generate/sampling.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// Called with (prompt index, token) for each new token as soon as it is
/// chosen, so a caller can stream text.
using TokenCallback = std::function<void(size_t row, int64_t token)>;

/// Extends each prompt by up to options.max_new_tokens() tokens sampled by
/// sample_next, stopping a row early at options.stop_token(). Returns the
/// new tokens of each prompt (the prompt not repeated), in prompt order.
///
/// All prompts run as one batch, whatever their lengths (BatchDecoder: a
/// left-padded KV cache, positions counted per row, padded slots never
/// attended to), so each row's logits are those of its prompt alone, and a
/// row that reaches stop_token leaves the batch. A context longer than
/// block_size is cropped to its last block_size tokens, as nanoGPT does;
/// positions then shift, so no cached key stays valid: from there on each
/// step runs the cropped contexts again (the cost of decoding without a
/// cache, and the same logits). The sampler draws for the rows of a step
/// together, from one generator seeded by options.seed().
///
/// Runs without grad and with dropout off (the model's train/eval mode is
/// restored after). Throws InputError for an empty prompt, a token id
/// outside the vocabulary (naming prompt, position and id) or bad options.
/// What prompt-lookup decoding did (SamplingOptions::prompt_lookup).
struct LookupStats {
  /// Tokens proposed, and how many of them greedy decoding confirmed.
  int64_t drafted = 0, accepted = 0;
  /// Forwards run, and tokens produced by them.
  int64_t forwards = 0, tokens = 0;
};

/// With options.prompt_lookup() > 0, each prompt is decoded on its own by
/// prompt-lookup decoding (Hugging Face's prompt_lookup_num_tokens): the
/// last 3, 2 or 1 tokens are looked up in the context, the tokens that
/// followed their latest earlier occurrence are proposed, and one forward
/// over them keeps the longest prefix greedy decoding agrees with, plus
/// the token greedy decoding gives after it. The output equals plain
/// greedy decoding; `stats`, when given, adds up what happened.
std::vector<std::vector<int64_t>> generate(GPTImpl& model,
                                           const std::vector<std::vector<int64_t>>& prompts,
                                           const SamplingOptions& options,
                                           const TokenCallback& on_token = {},
                                           LookupStats* stats = nullptr);

}  // namespace gpt2
