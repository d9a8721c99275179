#include "gpt2/file/json.h"

#include <fmt/format.h>

#include <cstdint>
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

// One flat object of integers, member by member.
class IntegerObject : public nlohmann::json_sax<json> {
 public:
  std::vector<std::pair<std::string, int64_t>> members;

  bool null() override { return refuse("null"); }
  bool boolean(bool) override { return refuse("a boolean"); }
  bool number_integer(number_integer_t value) override { return add(value); }
  bool number_unsigned(number_unsigned_t value) override {
    if (value > static_cast<number_unsigned_t>(INT64_MAX)) return refuse("an integer past 2^63");
    return add(static_cast<int64_t>(value));
  }
  bool number_float(number_float_t, const string_t&) override { return refuse("a fraction"); }
  bool string(string_t&) override { return refuse("a string"); }
  bool binary(binary_t&) override { return refuse("binary data"); }
  bool start_object(std::size_t) override {
    if (started_) return refuse("an object");
    started_ = true;
    return true;
  }
  bool key(string_t& key) override {
    key_ = std::move(key);
    return true;
  }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return refuse("an array"); }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw Refused{fmt::format("is not valid JSON: {}", without_id(e.what()))};
  }

 private:
  bool add(int64_t value) {
    if (!started_) throw Refused{"is not a JSON object"};
    members.emplace_back(std::move(key_), value);
    return true;
  }
  bool refuse(const char* found) {
    if (!started_) throw Refused{"is not a JSON object"};
    throw Refused{fmt::format("is not an object of integers: '{}' holds {}", key_, found)};
  }
  std::string key_;
  bool started_ = false;
};

// `parse()`, with a refusal or nlohmann's error as a FormatError naming `what`.
template <class Parse>
auto as_format_errors(const std::string& what, Parse parse) {
  try {
    return parse();
  } catch (const Refused& r) {
    throw FormatError(fmt::format("{} {}", what, r.reason));
  } catch (const json::exception& e) {
    throw FormatError(fmt::format("{} is not valid JSON: {}", what, without_id(e.what())));
  }
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> parse_json_integers(std::string_view text,
                                                                 const std::string& what) {
  return as_format_errors(what, [&] {
    IntegerObject object;
    json::sax_parse(text.begin(), text.end(), &object);
    return std::move(object.members);
  });
}

json parse_json(std::string_view text, const std::string& what) {
  return as_format_errors(what, [&] {
    Checker checker;
    json::sax_parse(text.begin(), text.end(), &checker);
    return json::parse(text.begin(), text.end());  // checked: shallow, no repeated key
  });
}

}  // namespace gpt2::detail
