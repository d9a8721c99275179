#include "gpt2/file/json.h"

#include <fmt/format.h>

#include <set>
#include <vector>

#include "gpt2/error.h"

namespace gpt2::detail {
namespace {

using nlohmann::json;

// Thrown from inside the parser's callback, which cannot return an error.
struct Refused {
  std::string reason;
};

// nlohmann's "[json.exception.parse_error.101] parse error at ..." without
// the bracketed id.
std::string without_id(const char* what) {
  std::string_view text(what);
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find("] ");
    if (close != std::string_view::npos) text.remove_prefix(close + 2);
  }
  return std::string(text);
}

}  // namespace

json parse_json(std::string_view text, const std::string& what) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  int depth = 0;
  auto check = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (++depth > kMaxJsonDepth) {
          throw Refused{fmt::format("nests arrays and objects deeper than {} levels",
                                    kMaxJsonDepth)};
        }
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        keys.pop_back();
        --depth;
        break;
      case json::parse_event_t::array_end:
        --depth;
        break;
      case json::parse_event_t::key:
        if (!keys.back().insert(parsed.get<std::string>()).second) {
          throw Refused{fmt::format("has the key '{}' twice in one object",
                                    parsed.get<std::string>())};
        }
        break;
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const Refused& r) {
    throw FormatError(fmt::format("{} {}", what, r.reason));
  } catch (const json::exception& e) {
    throw FormatError(fmt::format("{} is not valid JSON: {}", what, without_id(e.what())));
  }
}

}  // namespace gpt2::detail
