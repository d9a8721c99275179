#include "apps/gpt2/serve/completions.h"

// The text of one choice of a completion, built token by token: stop
// strings cut it, and what is handed out never ends inside a UTF-8
// character or inside what could still become a stop string.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace gpt2::app {
namespace {

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
