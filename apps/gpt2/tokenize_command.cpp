#include "apps/gpt2/tokenize_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include "gpt2/error.h"
#include "gpt2/file/read_file.h"
#include "gpt2/text/tokenizer.h"

namespace gpt2::app {
namespace {

std::string read_all(const std::string& path, std::istream& in) {
  if (path != "-") return read_file(path);
  if (&in == &std::cin) return read_stdin();  // the descriptor: its errors are errors
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    int32_t id = 0;
    const char* end = word.data() + word.size();
    auto [ptr, ec] = std::from_chars(word.data(), end, id);
    if (ec != std::errc() || ptr != end) {
      throw InputError(fmt::format("'{}' (word {} of the input) is not a token id", word,
                                   ids.size() + 1));
    }
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

int run_tokenize(const TokenizeFlags& flags, std::istream& in, std::ostream& out) {
  const std::string input = read_all(flags.input, in);
  const Tokenizer tokenizer =
      flags.bpe_dir.empty() ? Tokenizer::gpt2() : Tokenizer::from_dir(flags.bpe_dir);
  if (flags.decode) {
    out << tokenizer.decode(parse_ids(input));
  } else {
    fmt::print(out, "{}\n", fmt::join(tokenizer.encode(input, flags.allow_special), " "));
  }
  return 0;
}

void add_tokenize_command(CLI::App& app, int* rc) {
  auto flags = std::make_shared<TokenizeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "GPT-2 BPE: text to token ids (one line), or ids back to text with --decode");
  cmd->add_flag("--decode", flags->decode, "Read whitespace-separated ids, write their text");
  cmd->add_flag("--allow-special", flags->allow_special,
                "Encode <|endoftext|> as 50256 (default: as plain text)");
  cmd->add_option("--bpe-dir", flags->bpe_dir,
                  "Folder with GPT-2's encoder.json and vocab.bpe (default: the shipped copy)");
  cmd->add_option("input", flags->input, "File to read, or - for standard input")
      ->capture_default_str();
  cmd->callback([flags, rc] { *rc = run_tokenize(*flags, std::cin, std::cout); });
}

}  // namespace gpt2::app
