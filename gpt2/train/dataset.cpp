#include "gpt2/train/dataset.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

#include "gpt2/error.h"
#include "gpt2/file/json.h"
#include "gpt2/file/read_file.h"
#include "gpt2/text/char_tokenizer.h"
#include "gpt2/text/tokenizer.h"
#include "gpt2/train/data/data_folder.h"
#include "gpt2/train/data/shard_file.h"

namespace gpt2 {

const std::vector<std::string>& tokenizer_names() {
  static const std::vector<std::string> names = {"gpt2", "char"};
  return names;
}

void check_data_for_model(const DatasetMeta& data, const std::string& dir, int64_t vocab_size,
                          const std::string& model) {
  if (vocab_size < data.vocab_size) {
    throw ConfigError(fmt::format("{}'s vocab_size {} is smaller than the data's {} ids ({})", model,
                                  vocab_size, data.vocab_size, dir));
  }
  if (data.tokenizer == "char" && data.vocab_size != vocab_size) {
    throw ConfigError(fmt::format(
        "{} is character-level data with {} ids, but {} has vocab_size {}: its token ids would "
        "mean other things (prepare the text with --tokenizer gpt2 for a GPT-2 model)",
        dir, data.vocab_size, model, vocab_size));
  }
}

namespace {

constexpr const char* kUnfinished = "unfinished";

bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::symlink_status(path, ec));
}

}  // namespace

std::string unfinished_dataset_marker() {
  return nlohmann::json{{kUnfinished, "gpt2 prepare is replacing this folder's token files"}}.dump() + "\n";
}

std::string describe_dataset(const DatasetMeta& meta) {
  const std::string what = fmt::format("{} tokenizer, {} ids", meta.tokenizer, meta.vocab_size);
  if (meta.source == "meta.pkl") return what + ", from nanoGPT's meta.pkl";
  if (meta.source == "none") {
    return what + (meta.format == "llmc"
                       ? "; no meta: shards of GPT-2 BPE ids, as llm.c writes them"
                       : "; no meta: GPT-2 BPE ids as uint16, as nanoGPT's GPT-2-token datasets");
  }
  return what;
}

DatasetMeta read_dataset_meta(const std::string& dir) {
  const std::string path = dir + "/meta.json";
  if (!exists(path)) {
    if (exists(dir + "/train.bin")) return nanogpt_folder_meta(dir);
    if (!list_shards(dir, "train").empty()) return shard_folder_meta(dir);
    throw FileError(fmt::format("'{}' holds no prepared data (meta.json, train.bin and val.bin, "
                                "or token shards): prepare it with `gpt2 prepare`", dir));
  }
  // A char alphabet is at most a few MB of JSON; anything larger is not ours.
  const std::string text = read_file(path, "dataset metadata", 64u << 20);
  DatasetMeta meta;
  try {
    const nlohmann::json json = detail::parse_json(text, fmt::format("'{}'", path));
    if (json.is_object() && json.contains(kUnfinished)) {
      throw FileError(fmt::format("'{}' was being prepared when its `gpt2 prepare` stopped: "
                                  "prepare it again", dir));
    }
    meta.tokenizer = json.at("tokenizer").get<std::string>();
    meta.vocab_size = json.at("vocab_size").get<int64_t>();
    meta.train_tokens = json.value("train_tokens", int64_t{0});
    meta.val_tokens = json.value("val_tokens", int64_t{0});
    if (meta.tokenizer == "char") meta.alphabet = json.at("alphabet").get<std::string>();
    meta.format = json.value("format", std::string("nanogpt"));
    meta.shards = json.value("shards", int64_t{0});
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
