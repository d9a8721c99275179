#pragma once
/// Measuring a model on fixed tokens, so that two models compare on exactly
/// the same ones: the strided perplexity of a text (Hugging Face's
/// "Perplexity of fixed-length models"), the loss over a whole prepared
/// split in non-overlapping windows, not sampled batches, and the loss of
/// candidate endings after a context (multiple-choice tasks, choices.h).

#include <cstdint>
#include <functional>
#include <vector>

#include "gpt2/model/gpt.h"

namespace gpt2 {

/// Summed negative log-likelihood (nats) of the tokens scored.
struct TokenScore {
  /// Tokens predicted and scored (each at most once).
  int64_t tokens = 0;
  /// Sum of -log p(token | its context), in nats.
  double nll = 0;
  /// nll / tokens: the mean loss in nats (NaN when nothing was scored).
  double mean_loss() const;
  /// exp(mean_loss()).
  double perplexity() const;
};

/// The score of `ids` under `model` by the strided sliding window: windows
/// of `window` tokens (0: the model's block_size) start every `stride`
/// tokens; a window scores only the tokens no earlier window scored, each
/// predicted from the tokens before it in that window. With stride <
/// window every token but the first is scored once; with stride = window
/// the first token of each window has no context and is not scored.
/// Throws InputError for a stride outside [1, window], a window outside
/// [2, block_size], an id outside the vocabulary, or fewer than 2 ids.
/// Runs without gradients in eval mode (dropout off); the model's
/// training mode is restored after. The head runs on the scored positions
/// only. `progress`, when set, is called after each forward with the tokens
/// scored so far and the total (ids.size() - 1 at most).
TokenScore strided_score(GPTImpl& model, const std::vector<int32_t>& ids, int64_t stride,
                         int64_t window = 0,
                         const std::function<void(int64_t done, int64_t total)>& progress = {});

/// The score of every token of `tokens` (n of them, uint16 as in train.bin)
/// but the first: windows of block_size + 1 tokens starting every
/// block_size tokens (the last one shorter), `batch` windows per forward
/// (0 or less: as many as keep the logits within 16M floats, at least 1).
/// Throws InputError for fewer than 2 tokens, a null `tokens`, or an id
/// outside the vocabulary.
TokenScore split_score(GPTImpl& model, const uint16_t* tokens, int64_t n, int64_t batch = 8);

/// The score of each ending's tokens given `context`: all endings in one
/// forward, rows right-padded (a causal model's earlier positions never see
/// the padding). A row longer than block_size + 1 tokens loses context
/// tokens from its left, keeping at least one. Throws InputError for an
/// empty context, fewer than 1 ending, an empty one or one longer than
/// block_size tokens, or an id outside the vocabulary. Eval mode, no
/// gradients; the model's mode is restored after.
std::vector<TokenScore> ending_scores(GPTImpl& model, const std::vector<int32_t>& context,
                                      const std::vector<std::vector<int32_t>>& endings);

}  // namespace gpt2
