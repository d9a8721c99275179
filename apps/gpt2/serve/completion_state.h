#pragma once
// One /v1/completions request in flight (server.cpp): its choices, filled on
// the scheduler's thread and read on the HTTP thread, the response pieces
// OpenAI's API gives them, the server-sent events of a stream, and the log
// line when it ends.

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "apps/gpt2/serve/completions.h"
#include "gpt2/generate/scheduler.h"

namespace gpt2::app {

/// `j` as compact JSON, invalid UTF-8 replaced.
std::string dump(const nlohmann::json& j);

/// OpenAI's finish_reason for `why`: "length" for kLength and kTimeLimit
/// (OpenAI has no word for a server's time limit), "stop" otherwise.
const char* openai_finish_reason(FinishReason why);

struct Completion {
  struct Choice {
    explicit Choice(ChoiceText t) : text(std::move(t)) {}
    ChoiceText text;
    std::optional<FinishReason> finish;
    bool finish_sent = false;
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Choice> choices;
  std::vector<int64_t> jobs;
  int64_t prompt_tokens = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> first_token;
  std::string id, model;
  int64_t created = 0;
  /// What the first choice that ended with FinishReason::kError was told.
  std::string error;

  /// Whether every choice has ended. (These take `mutex` held.)
  bool done() const;
  /// One choice's piece: {index, text, logprobs, finish_reason}.
  nlohmann::json chunk(size_t index, const std::string& text,
                       const std::optional<FinishReason>& finish) const;
  /// {id, object, created, model}.
  nlohmann::json head() const;
  /// The non-streamed response: head, choices, usage; OpenAI's error object
  /// when a choice ended in an error (`failed` is then set).
  nlohmann::json final_body(bool& failed);
  /// The server-sent events for what the choices hold since the last call
  /// (`data: {...}\n\n` each), their finish_reason once; a choice that
  /// ended in an error sends OpenAI's error object instead.
  std::string take_events();
};

/// `request   cmpl-7: 4 prompt tokens, 12 completion tokens, first token
/// 63 ms, 456.4 tokens/s` on standard output.
void log_request(const Completion& c);

}  // namespace gpt2::app
