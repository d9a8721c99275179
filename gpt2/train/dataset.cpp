#include "gpt2/train/dataset.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "gpt2/error.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/file/json.h"
#include "gpt2/file/read_file.h"
#include "gpt2/text/char_tokenizer.h"
#include "gpt2/text/tokenizer.h"

namespace gpt2 {
namespace {

void write_file(const std::string& path, const char* data, size_t bytes) {
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    out.write(data, static_cast<std::streamsize>(bytes));
    out.close();
    if (!out) throw FileError(fmt::format("cannot write '{}'", tmp));
  });
}

void write_tokens(const std::string& path, const std::vector<int32_t>& ids) {
  std::vector<uint16_t> narrow(ids.begin(), ids.end());  // ranges checked by the caller
  write_file(path, reinterpret_cast<const char*>(narrow.data()), narrow.size() * 2);
}

}  // namespace

const std::vector<std::string>& tokenizer_names() {
  static const std::vector<std::string> names = {"gpt2", "char"};
  return names;
}

DatasetMeta prepare_dataset(const std::vector<std::string>& inputs, const std::string& dir,
                            const std::string& tokenizer, double val_fraction) {
  if (std::find(tokenizer_names().begin(), tokenizer_names().end(), tokenizer) ==
      tokenizer_names().end()) {
    throw InputError(fmt::format("unknown tokenizer '{}'; known: gpt2, char", tokenizer));
  }
  if (!(val_fraction > 0 && val_fraction < 1)) {
    throw InputError(fmt::format("the val fraction must be in (0, 1), got {}", val_fraction));
  }
  std::string text;
  for (const auto& path : inputs) text += read_file(path, "input");
  if (text.empty()) {
    throw InputError(fmt::format("no text to prepare: the input ({}) is empty",
                                 inputs.empty() ? "no files" : fmt::format("'{}'", fmt::join(inputs, "', '"))));
  }
  // nanoGPT: train = data[:int(n * 0.9)]; moved back to a UTF-8 lead byte.
  size_t split = static_cast<size_t>(static_cast<double>(text.size()) * (1 - val_fraction));
  while (split > 0 && split < text.size() && (static_cast<unsigned char>(text[split]) >> 6) == 0x2) --split;
  const std::string_view all(text);
  const std::string_view train_text = all.substr(0, split), val_text = all.substr(split);

  DatasetMeta meta;
  meta.tokenizer = tokenizer;
  std::vector<int32_t> train_ids, val_ids;
  if (tokenizer == "char") {
    const CharTokenizer chars = CharTokenizer::from_text(all);
    meta.vocab_size = chars.vocab_size();
    meta.alphabet = chars.alphabet();
    train_ids = chars.encode(train_text);
    val_ids = chars.encode(val_text);
  } else {
    const Tokenizer bpe = Tokenizer::gpt2();
    meta.vocab_size = bpe.vocab_size();
    train_ids = bpe.encode(train_text);
    val_ids = bpe.encode(val_text);
  }
  if (meta.vocab_size > std::numeric_limits<uint16_t>::max() + 1) {
    throw ConfigError(fmt::format("vocabulary of {} ids does not fit uint16 token files (at most "
                                  "65536)", meta.vocab_size));
  }
  for (const auto& [name, ids] : {std::pair{"train", &train_ids}, std::pair{"val", &val_ids}}) {
    if (ids->size() < 2) {
      throw InputError(fmt::format("the {} split holds {} tokens ({} bytes of {}); at least 2 are "
                                   "needed for one input and its target: give more text or "
                                   "another val fraction than {}",
                                   name, ids->size(), name == std::string("train") ? split : text.size() - split,
                                   text.size(), val_fraction));
    }
  }
  meta.train_tokens = static_cast<int64_t>(train_ids.size());
  meta.val_tokens = static_cast<int64_t>(val_ids.size());

  std::filesystem::create_directories(dir);
  write_tokens(dir + "/train.bin", train_ids);
  write_tokens(dir + "/val.bin", val_ids);
  nlohmann::json json = {{"tokenizer", meta.tokenizer},
                         {"vocab_size", meta.vocab_size},
                         {"train_tokens", meta.train_tokens},
                         {"val_tokens", meta.val_tokens},
                         {"dtype", "uint16"}};
  if (tokenizer == "char") json["alphabet"] = meta.alphabet;
  const std::string body = json.dump(2) + "\n";
  write_file(dir + "/meta.json", body.data(), body.size());
  return meta;
}

DatasetMeta read_dataset_meta(const std::string& dir) {
  const std::string path = dir + "/meta.json";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
    throw FileError(fmt::format("cannot read '{}': prepare the data with `gpt2 prepare`", path));
  }
  // A char alphabet is at most a few MB of JSON; anything larger is not ours.
  const std::string text = read_file(path, "dataset metadata", 64u << 20);
  DatasetMeta meta;
  try {
    const nlohmann::json json = detail::parse_json(text, fmt::format("'{}'", path));
    meta.tokenizer = json.at("tokenizer").get<std::string>();
    meta.vocab_size = json.at("vocab_size").get<int64_t>();
    meta.train_tokens = json.value("train_tokens", int64_t{0});
    meta.val_tokens = json.value("val_tokens", int64_t{0});
    if (meta.tokenizer == "char") meta.alphabet = json.at("alphabet").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw FileError(fmt::format("'{}' is not a dataset's meta.json: {}", path, e.what()));
  }
  if (std::find(tokenizer_names().begin(), tokenizer_names().end(), meta.tokenizer) ==
          tokenizer_names().end() || meta.vocab_size <= 0) {
    throw FileError(fmt::format("'{}' names tokenizer '{}' with vocab_size {}; expected gpt2 or "
                                "char and a positive size", path, meta.tokenizer, meta.vocab_size));
  }
  return meta;
}

TextCodec text_codec(const DatasetMeta& meta) {
  TextCodec codec;
  if (meta.tokenizer == "char") {
    const CharTokenizer chars = CharTokenizer::from_alphabet(meta.alphabet);
    codec.encode = [chars](std::string_view text) { return chars.encode(text); };
    codec.decode = [chars](const std::vector<int32_t>& ids) { return chars.decode(ids); };
    const auto newline = meta.alphabet.find('\n');
    codec.start_token = newline == std::string::npos ? 0 : chars.encode("\n").front();
  } else {
    const Tokenizer bpe = Tokenizer::gpt2();
    codec.encode = [bpe](std::string_view text) { return bpe.encode(text); };
    codec.decode = [bpe](const std::vector<int32_t>& ids) { return bpe.decode(ids); };
    codec.start_token = bpe.eot_token();
  }
  return codec;
}

}  // namespace gpt2
