#include "apps/gpt2/serve/completion_state.h"

#include <fmt/format.h>

#include <cstdio>

namespace gpt2::app {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

const char* openai_finish_reason(FinishReason why) {
  return why == FinishReason::kLength || why == FinishReason::kTimeLimit ? "length" : "stop";
}

bool Completion::done() const {
  for (const auto& c : choices) {
    if (!c.finish) return false;
  }
  return true;
}

json Completion::chunk(size_t index, const std::string& text,
                       const std::optional<FinishReason>& finish) const {
  return {{"index", index},
          {"text", text},
          {"logprobs", nullptr},
          {"finish_reason", finish ? json(openai_finish_reason(*finish)) : json(nullptr)}};
}

json Completion::head() const {
  return {{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model}};
}

json Completion::final_body(bool& failed) {
  failed = false;
  for (const auto& ch : choices) failed = failed || ch.finish == FinishReason::kError;
  if (failed) return error_body(error, "server_error");
  json list = json::array();
  int64_t completion_tokens = 0;
  for (size_t i = 0; i < choices.size(); ++i) {
    auto& ch = choices[i];
    list.push_back(chunk(i, ch.text.take(true), ch.finish));
    completion_tokens += ch.text.tokens();
  }
  json out = head();
  out["choices"] = list;
  out["usage"] = {{"prompt_tokens", prompt_tokens},
                  {"completion_tokens", completion_tokens},
                  {"total_tokens", prompt_tokens + completion_tokens}};
  return out;
}

std::string Completion::take_events() {
  std::string events;
  for (size_t i = 0; i < choices.size(); ++i) {
    auto& ch = choices[i];
    if (ch.finish_sent) continue;
    const bool finished = ch.finish.has_value();
    if (finished && *ch.finish == FinishReason::kError) {
      events += "data: " + dump(error_body(error, "server_error")) + "\n\n";
      ch.finish_sent = true;
      continue;
    }
    const std::string text = ch.text.take(finished);
    if (text.empty() && !finished) continue;
    json event = head();
    event["choices"] = json::array({chunk(i, text, ch.finish)});
    events += "data: " + dump(event) + "\n\n";
    ch.finish_sent = finished;
  }
  return events;
}

void log_request(const Completion& c) {
  using seconds = std::chrono::duration<double>;
  const auto now = std::chrono::steady_clock::now();
  int64_t out = 0;
  for (const auto& ch : c.choices) out += ch.text.tokens();
  const double total = seconds(now - c.start).count();
  const double first = c.first_token ? seconds(*c.first_token - c.start).count() : total;
  fmt::print("request   {}: {} prompt tokens, {} completion tokens, first token {:.0f} ms, "
             "{:.1f} tokens/s\n", c.id, c.prompt_tokens, out, first * 1e3,
             total > first ? static_cast<double>(out) / (total - first) : 0.0);
  std::fflush(stdout);
}

}  // namespace gpt2::app
