#include "gpt2/file/json.h"

#include <fmt/format.h>

#include <unordered_set>
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

// The checks, as a SAX pass that builds nothing: nesting depth and repeated
// keys. nlohmann's callback parser would do them while building, but it
// rescans an object's members at the end of each member object, which costs
// minutes on a header of 100,000 entries.
class Checker : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open();
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& key) override {
    if (!keys_.back().insert(key).second) {
      throw Refused{fmt::format("has the key '{}' twice in one object", key)};
    }
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    open();
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw Refused{fmt::format("is not valid JSON: {}", without_id(e.what()))};
  }

 private:
  void open() {
    if (++depth_ > kMaxJsonDepth) {
      throw Refused{fmt::format("nests arrays and objects deeper than {} levels", kMaxJsonDepth)};
    }
  }
  std::vector<std::unordered_set<std::string>> keys_;  // one set per open object
  int depth_ = 0;
};

}  // namespace

json parse_json(std::string_view text, const std::string& what) {
  try {
    Checker checker;
    json::sax_parse(text.begin(), text.end(), &checker);
    return json::parse(text.begin(), text.end());  // checked: shallow, no repeated key
  } catch (const Refused& r) {
    throw FormatError(fmt::format("{} {}", what, r.reason));
  } catch (const json::exception& e) {
    throw FormatError(fmt::format("{} is not valid JSON: {}", what, without_id(e.what())));
  }
}

}  // namespace gpt2::detail
