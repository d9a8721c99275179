#pragma once
/// Text generation from a GPT: prompts in, sampled continuations out, with
/// a KV cache so that each new token costs one position, not the context;
/// and the sampler that chooses each token from the logits (greedy,
/// temperature, top-k, top-p).

#include <ATen/core/Generator.h>
#include <torch/arg.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpt2/fields/fields.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// Where a sampled token is drawn (SamplingOptions::draw).
enum class Draw {
  /// kDevice for logits on a GPU, kHost for logits on the CPU.
  kAuto,
  /// The logits copied to the CPU and torch::multinomial run there from the
  /// generator: the CPU's stream, the same text from a seed on any device.
  kHost,
  /// Where the logits are: one uniform number per row from the generator
  /// (a CPU generator: a seed means the same numbers everywhere), which the
  /// inverse of the row's cumulative distribution, summed in float64 on the
  /// device, turns into a token. Only the ids leave the device. The text
  /// differs from kHost's, and kDevice on the CPU gives a GPU's text but
  /// where a number falls within rounding of two tokens' boundary.
  kDevice,
};

/// How generate() samples and when it stops.
struct SamplingOptions {
  /// Tokens to add to each prompt at most.
  TORCH_ARG(int64_t, max_new_tokens) = 256;
  /// Divides the logits; 0 means greedy (always the most likely token).
  TORCH_ARG(double, temperature) = 1.0;
  /// Keep only the k most likely tokens; unset keeps all.
  TORCH_ARG(std::optional<int64_t>, top_k) = std::nullopt;
  /// Keep the smallest set of most likely tokens whose probability reaches
  /// p (nucleus sampling); 1 keeps all.
  TORCH_ARG(double, top_p) = 1.0;
  /// Seed of the sampler's own generator: the same seed gives the same text.
  TORCH_ARG(uint64_t, seed) = 1337;
  /// A row stops after producing this token (GPT-2's <|endoftext|> is
  /// 50256); unset runs every row to max_new_tokens.
  TORCH_ARG(std::optional<int64_t>, stop_token) = std::nullopt;
  /// Decode with a KV cache (one new position per step) rather than
  /// recomputing the whole context per token, as nanoGPT does.
  TORCH_ARG(bool, use_cache) = true;
  /// On a CUDA device, replay each decoding step over the cache from a CUDA
  /// graph (DecodeSteps::kGraphed: one launch a token instead of one per
  /// op); false runs the ops one by one. The logits agree to float
  /// rounding, so greedy text differs only where a row's two best logits
  /// do. Elsewhere it changes nothing.
  TORCH_ARG(bool, cuda_graphs) = true;
  /// Where each token is drawn (greedy's argmax always runs where the
  /// logits are).
  TORCH_ARG(Draw, draw) = Draw::kAuto;
  /// Prompt-lookup decoding (greedy only): each step proposes up to this
  /// many tokens, the continuation of the last n-gram's latest earlier
  /// occurrence in the context, and checks them in one forward; 0 is off.
  /// The tokens are those of plain greedy decoding.
  TORCH_ARG(int64_t, prompt_lookup) = 0;
};

/// Throws InputError naming the option and its value for temperature < 0
/// or NaN, top_k < 1, top_p outside (0, 1], max_new_tokens < 0, or a
/// prompt_lookup outside [0, 64] or with a temperature other than 0.
void validate(const SamplingOptions& options);

/// Throws InputError naming the first position of a NaN or infinite value
/// in `logits`: what a model with non-finite weights produces.
void check_logits(const torch::Tensor& logits);

/// One token per row from logits (B, V): argmax at temperature 0, else a
/// draw from softmax(logits / temperature) restricted by top_k and top_p,
/// using `generator`, where options.draw() says (Draw). Returns (B) int64
/// on the logits' device. A temperature below float's
/// smallest normal number (1.2e-38) is greedy; above it the draw cannot
/// meet NaN (each row's largest logit is taken to 0 first), and the most
/// likely token survives any top_p. Throws InputError for logits of
/// another shape or kind, and check_logits's.
torch::Tensor sample_next(const torch::Tensor& logits, const SamplingOptions& options,
                          at::Generator& generator);

/// A row of sample_rows: its options and its own generator.
struct RowSampler {
  const SamplingOptions* options = nullptr;
  at::Generator* generator = nullptr;
};

/// What sample_rows gives a row: its token, or why it has none.
struct RowDraw {
  int64_t token = -1;
  /// Empty, or check_logits's message for the row's logits.
  std::string error;
};

/// One token per row of logits (B, V), row r drawn as sample_next draws it
/// with rows[r]'s options and generator, but the rows that draw on the
/// device (Draw::kDevice, or kAuto on a GPU) all in one batch there: a
/// server's rows, each with its own request's options and seed. A row
/// whose logits are not finite gets check_logits's message instead, and
/// the others their tokens. Throws InputError for logits of another shape
/// or kind, a count of rows other than B, or a null pointer.
std::vector<RowDraw> sample_rows(const torch::Tensor& logits,
                                 const std::vector<RowSampler>& rows);

/// The spellings of Draw (names<Draw>() in gpt2/fields/fields.h): `auto`,
/// `host`, `device`.
template <>
const std::vector<std::pair<Draw, std::string>>& names<Draw>();

/// Called with (prompt index, token) for each new token as soon as it is
/// chosen, so a caller can stream text.
using TokenCallback = std::function<void(size_t row, int64_t token)>;

/// What prompt-lookup decoding did (SamplingOptions::prompt_lookup).
struct LookupStats {
  /// Tokens proposed, and how many of them greedy decoding confirmed.
  int64_t drafted = 0, accepted = 0;
  /// Forwards run, and tokens produced by them.
  int64_t forwards = 0, tokens = 0;
};

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
///
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
