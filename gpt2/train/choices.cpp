#include "gpt2/train/choices.h"

#include <fmt/format.h>

#include <algorithm>

#include "gpt2/error.h"
#include "gpt2/file/json.h"
#include "gpt2/file/read_file.h"

namespace gpt2 {
namespace {

// The JSON type's name, for messages.
std::string kind(const nlohmann::json& j) { return j.type_name(); }

// A line's item, or FormatError `where: ...` naming what is wrong.
ChoiceItem parse_item(const nlohmann::json& j, const std::string& where, int64_t line) {
  const auto bad = [&](const std::string& what) { return FormatError(where + ": " + what); };
  if (!j.is_object()) throw bad(fmt::format("is a JSON {}, not an object", kind(j)));
  ChoiceItem item;
  item.line = line;
  const auto ctx = j.find("ctx");
  if (ctx == j.end()) throw bad("has no \"ctx\"");
  if (!ctx->is_string()) throw bad(fmt::format("\"ctx\" is a {}, not a string", kind(*ctx)));
  item.context = ctx->get<std::string>();
  if (item.context.empty()) throw bad("\"ctx\" is empty");
  const auto endings = j.find("endings");
  if (endings == j.end()) throw bad("has no \"endings\"");
  if (!endings->is_array() || endings->size() < 2) {
    throw bad(fmt::format("\"endings\" must be an array of at least 2 strings, got {} {}",
                          endings->is_array() ? "an array of" : "a",
                          endings->is_array() ? std::to_string(endings->size()) : kind(*endings)));
  }
  for (size_t k = 0; k < endings->size(); ++k) {
    const auto& e = (*endings)[k];
    if (!e.is_string() || e.get_ref<const std::string&>().empty()) {
      throw bad(fmt::format("ending {} is {}", k, e.is_string() ? "empty" : "a " + kind(e)));
    }
    item.endings.push_back(e.get<std::string>());
  }
  const auto label = j.find("label");
  if (label == j.end()) throw bad("has no \"label\"");
  if (!label->is_number_integer()) {
    throw bad(fmt::format("\"label\" is {}, not an integer", label->dump()));
  }
  const auto n = static_cast<int64_t>(item.endings.size());
  if (label->is_number_unsigned() ? label->get<uint64_t>() >= static_cast<uint64_t>(n)
                                  : label->get<int64_t>() < 0 || label->get<int64_t>() >= n) {
    throw bad(fmt::format("\"label\" {} is not in [0, {}) for its {} endings", label->dump(), n, n));
  }
  item.label = label->get<int64_t>();
  return item;
}

// The index of the smallest value; the first of equal ones.
template <class Value>
int64_t argmin(const std::vector<TokenScore>& scores, Value&& value) {
  int64_t best = 0;
  for (size_t k = 1; k < scores.size(); ++k) {
    if (value(scores[k]) < value(scores[best])) best = static_cast<int64_t>(k);
  }
  return best;
}

}  // namespace

std::vector<ChoiceItem> read_choices(const std::string& path) {
  const std::string text = read_file(path, "choices file", kMaxChoicesBytes);
  std::vector<ChoiceItem> items;
  int64_t line = 0;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    ++line;
    std::string_view row(text.data() + begin, end - begin);
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    begin = end + 1;
    if (row.find_first_not_of(" \t") == std::string_view::npos) continue;
    const std::string where = fmt::format("'{}' line {}", path, line);
    items.push_back(parse_item(detail::parse_json(row, where), where, line));
  }
  if (items.empty()) throw FormatError(fmt::format("'{}' has no item (one JSON object per line)", path));
  return items;
}

ChoiceResult score_choices(GPTImpl& model, const std::vector<ChoiceItem>& items,
                           const std::function<std::vector<int32_t>(std::string_view)>& encode,
                           const std::function<void(int64_t done)>& on_item) {
  ChoiceResult result;
  for (const ChoiceItem& item : items) {
    if (item.label < 0 || item.label >= static_cast<int64_t>(item.endings.size())) {
      throw InputError(fmt::format("line {}: the label {} is not an index of its {} endings",
                                   item.line, item.label, item.endings.size()));
    }
    std::vector<std::vector<int32_t>> endings;
    for (const auto& e : item.endings) endings.push_back(encode(" " + e));
    std::vector<TokenScore> scores;
    try {
      scores = ending_scores(model, encode(item.context), endings);
    } catch (const InputError& e) {
      throw InputError(fmt::format("line {}: {}", item.line, e.what()));
    }
    ++result.count;
    result.correct += argmin(scores, [](const TokenScore& s) { return s.nll; }) == item.label;
    result.correct_norm +=
        argmin(scores, [](const TokenScore& s) { return s.mean_loss(); }) == item.label;
    if (on_item) on_item(result.count);
  }
  return result;
}

}  // namespace gpt2
