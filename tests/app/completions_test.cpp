// `gpt2 serve`'s completions API apart from HTTP: the request schema and
// the text of a choice as its tokens arrive.
#include "apps/gpt2/serve/completions.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

namespace gpt2::app {
namespace {

const Tokenizer& bpe() {
  static const Tokenizer t = Tokenizer::gpt2();
  return t;
}

// Whether `s` is UTF-8 made of whole characters.
bool whole_characters(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

std::string refusal(const std::string& body) {
  try {
    parse_completion_request(body, bpe(), 50257, "m");
  } catch (const ApiError& e) {
    return e.param + ": " + e.what();
  }
  return "accepted";
}

TEST(Completions, ReadsOpenAIsFieldsWithItsDefaults) {
  const auto r = parse_completion_request(
      R"({"prompt": [[31373, 995], [1, 2]], "max_tokens": 5, "temperature": 0, "n": 2,
          "stop": "\n", "seed": 3, "stream": true, "model": "x"})", bpe(), 50257, "m");
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[0], (std::vector<int64_t>{31373, 995}));
  EXPECT_EQ(r.prompts[1], (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.options.max_new_tokens(), 5);
  EXPECT_EQ(r.options.temperature(), 0);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n"}));
  EXPECT_TRUE(r.seeded && r.stream);
  EXPECT_EQ(r.options.seed(), 3u);
  EXPECT_EQ(r.options.stop_token(), 50256);
  EXPECT_EQ(r.model, "x");
  const auto words = parse_completion_request(R"({"prompt": ["hello world", "x"]})", bpe(), 50257, "m");
  EXPECT_EQ(words.prompts.front(), (std::vector<int64_t>{31373, 995}));
  const auto d = parse_completion_request(R"({"prompt": ""})", bpe(), 50257, "m");
  EXPECT_EQ(d.prompts, (std::vector<std::vector<int64_t>>{{50256}})) << "'' is <|endoftext|>";
  EXPECT_EQ(d.options.max_new_tokens(), 16) << "OpenAI's default";
  EXPECT_FALSE(d.seeded || d.stream);
  EXPECT_EQ(d.model, "m");
}

TEST(Completions, RefusesValuesOutsideTheSchemaNamingTheField) {
  EXPECT_EQ(refusal(R"({"prompt": "x", "top_p": 0})"), "top_p: 'top_p' must be in (0, 1], got 0");
  EXPECT_EQ(refusal(R"({"prompt": "x", "max_tokens": 99999999999999999999})"),
            "max_tokens: 'max_tokens' must be an integer, got 1e+20");
  EXPECT_EQ(refusal(R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})"),
            R"(stop: 'stop' must be a string or a list of up to 4, got ["a","b","c","d","e"])");
  EXPECT_EQ(refusal(R"({"prompt": "x", "echo": true})"),
            "echo: 'echo' is not supported by this server (got true)");
  EXPECT_EQ(refusal(R"({"prompt": {"a": 1}})").substr(0, 17), "prompt: 'prompt' ");
  EXPECT_EQ(refusal("[1]"), ": the body must be a JSON object");
  EXPECT_EQ(refusal(R"({"prompt": "x", "echo": false, "logprobs": null, "best_of": 1})"), "accepted");
  EXPECT_EQ(refusal(R"({"prompt": "x", "n": 0})"), "n: 'n' must be in [1, 16], got 0");
  EXPECT_EQ(refusal(R"({"prompt": "x", "top_k": 50258})"), "top_k: 'top_k' must be in [0, 50257], got 50258");
  EXPECT_EQ(refusal(R"({"prompt": "x", "model": 3})"), "model: 'model' must be a string, got 3");
  EXPECT_EQ(refusal(R"({"prompt": ["a", [1]]})"),
            "prompt: 'prompt' must be a string, a list of strings, a list of token ids or a list of "
            "lists of token ids, all of one kind; its first item is a string and it also holds [1]");
  EXPECT_EQ(refusal(R"({"prompt": [[1], "a"]})").substr(0, 17), "prompt: 'prompt' ");
}

TEST(Completions, TheBodyGoesThroughTheGuardedParserBeforeAnyField) {
  // Nesting past the bound in any field, a repeated key, a number past
  // double's range: 400s naming what, never nlohmann's exception text.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const char* field : {"prompt", "max_tokens", "logprobs", "stop"}) {
    const auto r = refusal(fmt::format(R"({{"{}": {}}})", field, deep));
    EXPECT_EQ(r, ": the body nests arrays and objects deeper than 32 levels") << field;
  }
  EXPECT_EQ(refusal(R"({"prompt": "x", "n": 1, "n": 2})"), ": the body has the key 'n' twice in one object");
  for (const char* v : {"1e400", "-1e400"}) {
    const auto r = refusal(fmt::format(R"({{"prompt": "x", "temperature": {}}})", v));
    EXPECT_EQ(r.rfind(": the body is not valid JSON: ", 0), 0u) << r;
    EXPECT_EQ(r.find("json.exception"), std::string::npos) << r;
  }
  EXPECT_EQ(refusal("{\"prompt\": \"x\"").rfind(": the body is not valid JSON: ", 0), 0u);
}

TEST(Completions, ChoiceTextSendsWholeCharactersOnlyAndHoldsBackAPossibleStop) {
  // A CJK character is split over byte-level tokens: no piece ends inside one.
  const std::string text = "语言 model";
  ChoiceText c(bpe(), {});
  std::string sent;
  for (const int32_t id : bpe().encode(text)) {
    c.add(id);
    const std::string piece = c.take();
    EXPECT_TRUE(whole_characters(piece)) << "a piece cuts a character: " << piece;
    sent += piece;
  }
  sent += c.take(true);
  EXPECT_EQ(sent, text);

  ChoiceText s(bpe(), {"lo w"});
  EXPECT_TRUE(s.add(31373));  // "hello"
  EXPECT_EQ(s.take(), "hel") << "'lo' may begin the stop string";
  EXPECT_FALSE(s.add(995));   // " world": "lo w" appears
  EXPECT_EQ(s.text(), "hel");
  EXPECT_EQ(s.take(true), "");
  EXPECT_EQ(s.tokens(), 2);
  ChoiceText e(bpe(), {});
  EXPECT_TRUE(e.add(50256));
  EXPECT_EQ(e.take(true), "") << "<|endoftext|> adds no text";
}

}  // namespace
}  // namespace gpt2::app
