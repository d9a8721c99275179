#include "apps/gpt2/serve/completions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/file/json.h"

namespace gpt2::app {
namespace {

using nlohmann::json;

// How a field's value is checked before it is read.
enum class Kind {
  kString,       // a string
  kBool,         // true or false
  kInteger,      // an integer in [lo, hi]
  kSeed,         // any integer of int64 or uint64
  kNumber,       // a finite number in [lo, hi], or (lo, hi] when lo_open
  kPrompt,       // read by the prompt's own rules
  kStop,         // a string or a list of up to 4 non-empty strings
  kUnsupported,  // refused unless it holds `none`
};

// The fields of OpenAI's completions request this server reads or refuses,
// each checked by its kind before any is read; a field not listed is
// ignored, as OpenAI's API ignores what it does not know. hi < lo for
// top_k means "the model's vocabulary size".
struct ApiField {
  const char* key;
  Kind kind;
  double lo = 0, hi = 0;
  bool lo_open = false;
  json none = nullptr;  // kUnsupported: the value that means "not asked for"
};

const std::vector<ApiField>& api_fields() {
  static const std::vector<ApiField> fields = {
      {"model", Kind::kString},
      {"prompt", Kind::kPrompt},
      {"n", Kind::kInteger, 1, 16},
      {"max_tokens", Kind::kInteger, 0, static_cast<double>(kMaxTokensLimit)},
      {"temperature", Kind::kNumber, 0, 2},
      {"top_p", Kind::kNumber, 0, 1, /*lo_open=*/true},
      {"top_k", Kind::kInteger, 0, -1},
      {"seed", Kind::kSeed},
      {"stream", Kind::kBool},
      {"stop", Kind::kStop},
      {"logprobs", Kind::kUnsupported},
      {"echo", Kind::kUnsupported, 0, 0, false, false},
      {"best_of", Kind::kUnsupported, 0, 0, false, 1},
      {"suffix", Kind::kUnsupported},
      {"logit_bias", Kind::kUnsupported},
  };
  return fields;
}

[[noreturn]] void refuse(const std::string& param, const std::string& what) {
  throw ApiError(fmt::format("'{}' {}", param, what), param);
}

// A value as the message shows it: at most 60 characters. The body's depth
// is bounded (parse_json), so dumping it cannot run deep.
std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// Checks `value` (not null) against field `f`'s kind and range.
void check_field(const ApiField& f, const json& value, int64_t vocab_size) {
  switch (f.kind) {
    case Kind::kString:
      if (!value.is_string()) refuse(f.key, fmt::format("must be a string, got {}", shown(value)));
      return;
    case Kind::kBool:
      if (!value.is_boolean()) refuse(f.key, fmt::format("must be true or false, got {}", shown(value)));
      return;
    case Kind::kSeed:
      if (!value.is_number_integer()) refuse(f.key, fmt::format("must be an integer, got {}", shown(value)));
      return;
    case Kind::kInteger: {
      if (!value.is_number_integer()) refuse(f.key, fmt::format("must be an integer, got {}", shown(value)));
      const auto lo = static_cast<int64_t>(f.lo);
      const auto hi = f.hi < f.lo ? vocab_size : static_cast<int64_t>(f.hi);
      const bool inside = value.is_number_unsigned()
                              ? value.get<uint64_t>() >= static_cast<uint64_t>(std::max<int64_t>(lo, 0)) &&
                                    value.get<uint64_t>() <= static_cast<uint64_t>(hi)
                              : value.get<int64_t>() >= lo && value.get<int64_t>() <= hi;
      if (!inside) refuse(f.key, fmt::format("must be in [{}, {}], got {}", lo, hi, shown(value)));
      return;
    }
    case Kind::kNumber: {
      if (!value.is_number()) refuse(f.key, fmt::format("must be a number, got {}", shown(value)));
      const double v = value.get<double>();
      if (!std::isfinite(v) || !(f.lo_open ? v > f.lo : v >= f.lo) || !(v <= f.hi)) {
        refuse(f.key, fmt::format("must be in {}{}, {}], got {}", f.lo_open ? "(" : "[", f.lo, f.hi,
                                  shown(value)));
      }
      return;
    }
    case Kind::kStop: {
      const json list = value.is_string() ? json::array({value}) : value;
      if (!list.is_array() || list.size() > 4) {
        refuse(f.key, fmt::format("must be a string or a list of up to 4, got {}", shown(value)));
      }
      for (const auto& s : list) {
        if (!s.is_string() || s.get<std::string>().empty()) {
          refuse(f.key, fmt::format("holds {}, not a non-empty string", shown(s)));
        }
      }
      return;
    }
    case Kind::kUnsupported:
      if (value != f.none) refuse(f.key, fmt::format("is not supported by this server (got {})", shown(value)));
      return;
    case Kind::kPrompt:
      return;  // parse_completion_request reads it by its own rules
  }
}

// The field `key` when present and not null (checked by check_field).
const json* present(const json& body, const char* key) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
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

}  // namespace

json error_body(const std::string& message, const std::string& type, const std::string& param) {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", nullptr}}}};
}

json parse_body(const std::string& text) {
  try {
    return detail::parse_json(text, "the body");
  } catch (const FormatError& e) {
    throw ApiError(e.what(), "");
  }
}

CompletionRequest parse_completion_request(const std::string& body_text, const Tokenizer& tokenizer,
                                           int64_t vocab_size, const std::string& model_name) {
  const json body = parse_body(body_text);
  if (!body.is_object()) throw ApiError("the body must be a JSON object", "");
  for (const ApiField& f : api_fields()) {
    if (const json* v = present(body, f.key)) check_field(f, *v, vocab_size);
  }
  CompletionRequest r;
  r.model = model_name;
  if (const json* m = present(body, "model")) r.model = m->get<std::string>();
  const int32_t eot = tokenizer.eot_token();
  auto text_ids = [&](const std::string& text) {
    const auto ids = tokenizer.encode(text);
    return ids.empty() ? std::vector<int64_t>{eot} : std::vector<int64_t>(ids.begin(), ids.end());
  };
  const json* prompt = present(body, "prompt");
  const char* kForms = "must be a string, a list of strings, a list of token ids or a list of lists "
                       "of token ids";
  if (!prompt) {
    r.prompts.push_back({eot});  // OpenAI's default prompt is <|endoftext|>
  } else if (prompt->is_string()) {
    r.prompts.push_back(text_ids(prompt->get<std::string>()));
  } else if (prompt->is_array() && !prompt->empty()) {
    const json& first = prompt->front();
    if (first.is_number_integer()) {
      r.prompts.push_back(token_list(*prompt, vocab_size, "prompt"));
    } else if (first.is_string() || (first.is_array() && !first.empty())) {
      // A list of one kind: every item a string, or every item a token list.
      for (const auto& p : *prompt) {
        if (p.is_string() && first.is_string()) {
          r.prompts.push_back(text_ids(p.get<std::string>()));
        } else if (p.is_array() && !p.empty() && first.is_array()) {
          r.prompts.push_back(token_list(p, vocab_size, "prompt"));
        } else {
          refuse("prompt", fmt::format("{}, all of one kind; its first item is {} and it also "
                                       "holds {}", kForms, first.is_string() ? "a string" : "a list",
                                       shown(p)));
        }
      }
    } else {
      refuse("prompt", fmt::format("{}; it holds {}", kForms, shown(first)));
    }
  } else {
    refuse("prompt", fmt::format("{}, got {}", kForms, shown(*prompt)));
  }
  if (r.prompts.size() > 64) refuse("prompt", fmt::format("holds {} prompts; at most 64", r.prompts.size()));
  const auto integer = [&](const char* key, int64_t fallback) {
    const json* v = present(body, key);
    return v ? v->get<int64_t>() : fallback;
  };
  const auto number = [&](const char* key, double fallback) {
    const json* v = present(body, key);
    return v ? v->get<double>() : fallback;
  };
  r.n = integer("n", 1);
  r.options.max_new_tokens(integer("max_tokens", 16))
      .temperature(number("temperature", 1.0))
      .top_p(number("top_p", 1.0))
      .stop_token(eot);
  if (const int64_t top_k = integer("top_k", 0); top_k > 0) r.options.top_k(top_k);
  if (const json* seed = present(body, "seed")) {
    r.options.seed(seed->is_number_unsigned() ? seed->get<uint64_t>()
                                              : static_cast<uint64_t>(seed->get<int64_t>()));
    r.seeded = true;
  }
  if (const json* stream = present(body, "stream")) r.stream = stream->get<bool>();
  if (const json* stop = present(body, "stop")) {
    for (const auto& s : stop->is_string() ? json::array({*stop}) : *stop) {
      r.stop.push_back(s.get<std::string>());
    }
  }
  return r;
}

}  // namespace gpt2::app
