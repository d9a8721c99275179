#include "apps/gpt2/serve/completions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpt2::app {
namespace {

using nlohmann::json;

// Fields OpenAI's API has that this server does not do, and the value that
// means "not asked for".
const std::vector<std::pair<const char*, json>>& unsupported() {
  static const std::vector<std::pair<const char*, json>> fields = {
      {"logprobs", nullptr}, {"echo", false}, {"best_of", 1}, {"suffix", nullptr},
      {"logit_bias", nullptr}};
  return fields;
}

[[noreturn]] void refuse(const std::string& param, const std::string& what) {
  throw ApiError(fmt::format("'{}' {}", param, what), param);
}

std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

double number(const json& body, const char* key, double fallback, double lo, double hi,
              bool lo_open = false) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_number()) refuse(key, fmt::format("must be a number, got {}", shown(*it)));
  const double v = it->get<double>();
  if (!(lo_open ? v > lo : v >= lo) || !(v <= hi)) {
    refuse(key, fmt::format("must be in {}{}, {}], got {}", lo_open ? "(" : "[", lo, hi, shown(*it)));
  }
  return v;
}

int64_t integer(const json& body, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) refuse(key, fmt::format("must be an integer, got {}", shown(*it)));
  if (it->is_number_unsigned() ? it->get<uint64_t>() > static_cast<uint64_t>(hi)
                               : it->get<int64_t>() < lo || it->get<int64_t>() > hi) {
    refuse(key, fmt::format("must be in [{}, {}], got {}", lo, hi, shown(*it)));
  }
  return it->get<int64_t>();
}

std::vector<int64_t> token_list(const json& list, int64_t vocab_size, const std::string& param) {
  std::vector<int64_t> ids;
  for (const auto& t : list) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab_size) {
      refuse(param, fmt::format("holds {}, not a token id in [0, {})", shown(t), vocab_size));
    }
    ids.push_back(t.get<int64_t>());
  }
  return ids;
}

// The length of the longest prefix of `s` made of whole UTF-8 characters
// (a cut character at the end is held back; invalid bytes pass).
size_t whole_utf8(const std::string& s, size_t from) {
  size_t end = s.size();
  // Look back at most 3 bytes for the start of a cut sequence.
  for (size_t back = 1; back <= 3 && back <= end - from; ++back) {
    const auto c = static_cast<unsigned char>(s[end - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? end - back : end;
  }
  return end;
}

}  // namespace

json error_body(const std::string& message, const std::string& type, const std::string& param) {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", nullptr}}}};
}

CompletionRequest parse_completion_request(const std::string& body_text, const Tokenizer& tokenizer,
                                           int64_t vocab_size, const std::string& model_name) {
  json body;
  try {
    body = json::parse(body_text);
  } catch (const json::parse_error& e) {
    throw ApiError(fmt::format("the body is not valid JSON: {}", e.what()), "");
  }
  if (!body.is_object()) throw ApiError("the body must be a JSON object", "");
  for (const auto& [key, none] : unsupported()) {
    const auto it = body.find(key);
    if (it != body.end() && !it->is_null() && *it != none) {
      refuse(key, fmt::format("is not supported by this server (got {})", shown(*it)));
    }
  }
  CompletionRequest r;
  r.model = model_name;
  if (const auto m = body.find("model"); m != body.end() && m->is_string()) r.model = m->get<std::string>();
  const auto prompt = body.find("prompt");
  const int32_t eot = tokenizer.eot_token();
  auto text_ids = [&](const std::string& text) {
    const auto ids = tokenizer.encode(text);
    return ids.empty() ? std::vector<int64_t>{eot} : std::vector<int64_t>(ids.begin(), ids.end());
  };
  if (prompt == body.end() || prompt->is_null()) {
    r.prompts.push_back({eot});  // OpenAI's default prompt is <|endoftext|>
  } else if (prompt->is_string()) {
    r.prompts.push_back(text_ids(prompt->get<std::string>()));
  } else if (prompt->is_array() && !prompt->empty()) {
    const json& first = prompt->front();
    if (first.is_number_integer()) {
      r.prompts.push_back(token_list(*prompt, vocab_size, "prompt"));
    } else {
      for (const auto& p : *prompt) {
        if (p.is_string()) {
          r.prompts.push_back(text_ids(p.get<std::string>()));
        } else if (p.is_array() && !p.empty()) {
          r.prompts.push_back(token_list(p, vocab_size, "prompt"));
        } else {
          refuse("prompt", fmt::format("must be a string, a list of strings, a list of token ids "
                                       "or a list of lists of them; it holds {}", shown(p)));
        }
      }
    }
  } else {
    refuse("prompt", fmt::format("must be a string, a list of strings, a list of token ids or a "
                                 "list of lists of them, got {}", shown(*prompt)));
  }
  if (r.prompts.size() > 64) refuse("prompt", fmt::format("holds {} prompts; at most 64", r.prompts.size()));
  r.n = integer(body, "n", 1, 1, 16);
  const int64_t max_tokens = integer(body, "max_tokens", 16, 0, kMaxTokensLimit);
  const double temperature = number(body, "temperature", 1.0, 0.0, 2.0);
  const double top_p = number(body, "top_p", 1.0, 0.0, 1.0, /*lo_open=*/true);
  const int64_t top_k = integer(body, "top_k", 0, 0, vocab_size);
  r.options.max_new_tokens(max_tokens).temperature(temperature).top_p(top_p).stop_token(eot);
  if (top_k > 0) r.options.top_k(top_k);
  if (const auto seed = body.find("seed"); seed != body.end() && !seed->is_null()) {
    if (!seed->is_number_integer()) refuse("seed", fmt::format("must be an integer, got {}", shown(*seed)));
    r.options.seed(seed->is_number_unsigned() ? seed->get<uint64_t>()
                                              : static_cast<uint64_t>(seed->get<int64_t>()));
    r.seeded = true;
  }
  if (const auto stream = body.find("stream"); stream != body.end() && !stream->is_null()) {
    if (!stream->is_boolean()) refuse("stream", fmt::format("must be true or false, got {}", shown(*stream)));
    r.stream = stream->get<bool>();
  }
  if (const auto stop = body.find("stop"); stop != body.end() && !stop->is_null()) {
    const json list = stop->is_string() ? json::array({*stop}) : *stop;
    if (!list.is_array() || list.size() > 4) {
      refuse("stop", fmt::format("must be a string or a list of up to 4, got {}", shown(*stop)));
    }
    for (const auto& s : list) {
      if (!s.is_string() || s.get<std::string>().empty()) {
        refuse("stop", fmt::format("holds {}, not a non-empty string", shown(s)));
      }
      r.stop.push_back(s.get<std::string>());
    }
  }
  return r;
}

ChoiceText::ChoiceText(const Tokenizer& tokenizer, std::vector<std::string> stop)
    : tokenizer_(tokenizer), stop_(std::move(stop)) {}

bool ChoiceText::add(int64_t token) {
  ++tokens_;
  if (stopped_) return false;
  if (token == tokenizer_.eot_token() || token < 0 || token >= tokenizer_.vocab_size()) return true;
  const size_t before = text_.size();
  text_ += tokenizer_.decode_token(static_cast<int32_t>(token));
  size_t longest = 0;
  for (const auto& s : stop_) longest = std::max(longest, s.size());
  const size_t from = before >= longest ? before - longest + 1 : 0;
  size_t cut = std::string::npos;
  for (const auto& s : stop_) cut = std::min(cut, text_.find(s, from));
  if (cut == std::string::npos) return true;
  text_.resize(std::max(cut, taken_));
  stopped_ = true;
  return false;
}

std::string ChoiceText::take(bool final) {
  size_t end = text_.size();
  if (!final && !stopped_) {
    size_t hold = 0;  // the longest tail that could still begin a stop string
    for (const auto& s : stop_) {
      for (size_t k = std::min(s.size() - 1, end - taken_); k > hold; --k) {
        if (text_.compare(end - k, k, s, 0, k) == 0) {
          hold = k;
          break;
        }
      }
    }
    end -= hold;
    end = taken_ + whole_utf8(text_.substr(taken_, end - taken_), 0);
  }
  std::string out = text_.substr(taken_, end - taken_);
  taken_ = end;
  return out;
}

}  // namespace gpt2::app
