#pragma once
// OpenAI's completions API for `gpt2 serve`, apart from HTTP: a request's
// JSON read into sampling requests, the text of each choice built as its
// tokens arrive (stop strings, whole UTF-8 characters only), and the
// response's JSON.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpt2/generate/generate.h"
#include "gpt2/text/tokenizer.h"

namespace gpt2::app {

/// A request the API refuses: HTTP 400 with OpenAI's error object.
class ApiError : public std::runtime_error {
 public:
  ApiError(const std::string& message, std::string param)
      : std::runtime_error(message), param(std::move(param)) {}
  /// The request field at fault ("" when none).
  std::string param;
};

/// The error body OpenAI's API sends: {"error": {"message", "type", "param", "code"}}.
nlohmann::json error_body(const std::string& message, const std::string& type,
                          const std::string& param = "");

/// What /v1/completions was asked.
struct CompletionRequest {
  /// Each prompt's token ids (a string is tokenized; "" is <|endoftext|>).
  std::vector<std::vector<int64_t>> prompts;
  /// Choices per prompt.
  int64_t n = 1;
  /// Strings that end a choice (not included in its text); up to 4.
  std::vector<std::string> stop;
  /// Send server-sent events as tokens come.
  bool stream = false;
  /// max_tokens, temperature, top_p, top_k, seed; stop_token <|endoftext|>.
  SamplingOptions options;
  /// Whether a seed was given (else each choice draws a fresh one).
  bool seeded = false;
  /// The model name to answer with.
  std::string model;
};

/// Parses a request body with the library's guarded JSON parser (nesting,
/// repeated keys, numbers past double's range); ApiError (param "") saying
/// why otherwise.
nlohmann::json parse_body(const std::string& text);

/// Largest max_tokens a request may ask for.
inline constexpr int64_t kMaxTokensLimit = 1 << 16;

/// Reads the body of a /v1/completions request: parse_body, then every
/// field in one table of the API's fields (type, range, finiteness) before
/// any is read. Throws ApiError naming the field and the value for anything
/// out of OpenAI's schema or not supported here (logprobs, echo, best_of,
/// suffix, logit_bias).
CompletionRequest parse_completion_request(const std::string& body, const Tokenizer& tokenizer,
                                           int64_t vocab_size, const std::string& model_name);

/// The text of one choice, built token by token.
class ChoiceText {
 public:
  ChoiceText(const Tokenizer& tokenizer, std::vector<std::string> stop);
  /// Adds a token; returns false when a stop string has appeared (the text
  /// then ends before it). <|endoftext|> adds no text.
  bool add(int64_t token);
  /// The text not yet taken that is safe to send: whole UTF-8 characters,
  /// holding back what could still begin a stop string. With `final`,
  /// everything left.
  std::string take(bool final = false);
  /// The whole text so far (ended at a stop string once one appeared).
  const std::string& text() const { return text_; }
  /// Tokens added.
  int64_t tokens() const { return tokens_; }

 private:
  const Tokenizer& tokenizer_;
  std::vector<std::string> stop_;
  std::string text_;
  size_t taken_ = 0;
  int64_t tokens_ = 0;
  bool stopped_ = false;
};

}  // namespace gpt2::app
