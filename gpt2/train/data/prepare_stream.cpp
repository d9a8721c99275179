// prepare_dataset: the inputs in pieces (data/text_input.h) through the
// tokenizer on several threads, in order, into a sink (data/token_sinks.h).
// Memory holds a few pieces per thread, whatever the size of the input.

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <thread>

#include "gpt2/error.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/file/output_dir.h"
#include "gpt2/file/read_file.h"
#include "gpt2/io/nanogpt_meta.h"
#include "gpt2/text/char_tokenizer.h"
#include "gpt2/text/tokenizer.h"
#include "gpt2/train/data/text_input.h"
#include "gpt2/train/data/token_sinks.h"
#include "gpt2/train/dataset.h"

namespace gpt2 {
namespace {

constexpr std::size_t kPieceBytes = 1 << 20;
constexpr std::size_t kPiecesPerThread = 4;

int usable_cores() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Copies standard input into a temporary file in `dir` (removed with the
// returned object): nanoGPT's split needs the total size, the character
// tokenizer a second pass.
std::unique_ptr<StagedFile> spool_stdin(const std::string& dir) {
  auto spool = std::make_unique<StagedFile>(dir + "/.stdin");
  std::vector<char> block(kPieceBytes);
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, block.data(), block.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw FileError("cannot read standard input: read: " + errno_text(errno));
    if (n == 0) return spool;
    spool->append(block.data(), static_cast<std::size_t>(n));
  }
}

// The byte at `offset` of the inputs, concatenated.
unsigned char byte_at(const std::vector<TextInput>& inputs, uint64_t offset) {
  for (const auto& in : inputs) {
    if (offset < in.size) {
      const InputFile file(in.path, "input");
      unsigned char b = 0;
      if (::pread(file.fd(), &b, 1, static_cast<off_t>(offset)) != 1) {
        throw file.error("read: " + errno_text(errno));
      }
      return b;
    }
    offset -= in.size;
  }
  return 0;
}

// The character tokenizer of the inputs' distinct characters: the union of
// each piece's, which sorts as the whole text's (UTF-8 sorts bytewise in
// code-point order).
CharTokenizer char_alphabet(const std::vector<TextInput>& inputs, const std::vector<uint64_t>& starts) {
  std::set<std::string> chars;
  read_pieces(inputs, kPieceBytes, {}, [&](TextPiece&& piece) {
    std::string alphabet;
    try {
      alphabet = CharTokenizer::from_text(piece.text).alphabet();
    } catch (const InputError& e) {
      throw InputError(fmt::format("input '{}', in its bytes from {}: {}", inputs[piece.document].path,
                                   piece.offset - starts[piece.document], e.what()));
    }
    for (std::size_t i = 0; i < alphabet.size();) {
      const auto b = static_cast<unsigned char>(alphabet[i]);
      const std::size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
      chars.insert(alphabet.substr(i, len));
      i += len;
    }
  });
  std::string alphabet;
  for (const auto& c : chars) alphabet += c;
  return CharTokenizer::from_alphabet(alphabet);
}

void write_meta(const std::string& dir, const DatasetMeta& meta, const PrepareOptions& o) {
  nlohmann::json json = {{"tokenizer", meta.tokenizer},
                         {"vocab_size", meta.vocab_size},
                         {"train_tokens", meta.train_tokens},
                         {"val_tokens", meta.val_tokens},
                         {"dtype", "uint16"}};
  if (meta.tokenizer == "char") json["alphabet"] = meta.alphabet;
  if (meta.format == "llmc") {
    json["format"] = "llmc";
    json["shards"] = meta.shards;
    json["shard_tokens"] = o.shard_tokens;
  } else if (meta.tokenizer == "char") {
    // nanoGPT's own meta.pkl too, which its sample.py decodes with.
    const CharTokenizer chars = CharTokenizer::from_alphabet(meta.alphabet);
    std::vector<std::string> itos;
    for (int32_t id = 0; id < chars.vocab_size(); ++id) itos.push_back(chars.decode({id}));
    write_file_atomically(dir + "/meta.pkl", nanogpt_meta_pickle(itos));
  }
  write_file_atomically(dir + "/meta.json", json.dump(2) + "\n");
}

void check_options(const PrepareOptions& o) {
  const auto known = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (!known(tokenizer_names(), o.tokenizer)) {
    throw InputError(fmt::format("unknown tokenizer '{}'; known: gpt2, char", o.tokenizer));
  }
  if (!known(data_format_names(), o.format)) {
    throw InputError(fmt::format("unknown data format '{}'; known: nanogpt, llmc", o.format));
  }
  if (!(o.val_fraction > 0 && o.val_fraction < 1)) {
    throw InputError(fmt::format("the val fraction must be in (0, 1), got {}", o.val_fraction));
  }
  if (o.shard_tokens < 1 || o.shard_tokens > std::numeric_limits<int32_t>::max()) {
    throw InputError(fmt::format("--shard-tokens must be in [1, 2^31) (an int32 header count), "
                                 "got {}", o.shard_tokens));
  }
}

// The shards' default NAME: "out/fineweb/" -> "fineweb".
std::string folder_name(const std::string& dir) {
  std::filesystem::path path = std::filesystem::absolute(dir).lexically_normal();
  if (!path.has_filename()) path = path.parent_path();
  return path.filename().empty() ? "data" : path.filename().string();
}

// The shards' NAME, checked: a plain file name (letters, digits, '.', '_',
// '-'; not hidden) that holds neither "_train_" nor "_val_", which the
// readers take for the split.
std::string checked_shard_name(const PrepareOptions& o, const std::string& dir) {
  const std::string name = o.shard_name.empty() ? folder_name(dir) : o.shard_name;
  const char* whence = o.shard_name.empty() ? "the folder's name, the default shard name," : "the shard name";
  const bool plain = !name.empty() && name.front() != '.' &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
                     });
  if (!plain) {
    throw InputError(fmt::format("{} '{}' is not a plain name: use letters, digits, '.', '_' and "
                                 "'-', not starting with '.'{}", whence, name,
                                 o.shard_name.empty() ? "; give --shard-name" : ""));
  }
  for (const char* split : {"_train_", "_val_"}) {
    if (name.find(split) != std::string::npos) {
      throw InputError(fmt::format("{} '{}' holds '{}', which the shard readers take for the "
                                   "split: choose a name without it{}", whence, name, split,
                                   o.shard_name.empty() ? " (--shard-name)" : ""));
    }
  }
  return name;
}

DatasetMeta prepare_into(std::vector<TextInput> inputs, const std::string& dir,
                         const PrepareOptions& o) {
  std::unique_ptr<StagedFile> spool;
  for (auto& in : inputs) {
    if (in.is_stdin() && (o.format == "nanogpt" || o.tokenizer == "char")) {
      spool = spool_stdin(dir);
      in = {spool->tmp_path(), spool->size()};
    }
  }
  std::vector<uint64_t> starts;
  uint64_t total = 0;
  bool any_stdin = false;
  for (const auto& in : inputs) {
    starts.push_back(total);
    total += in.size;
    any_stdin |= in.is_stdin();
  }
  if (total == 0 && !any_stdin) throw InputError("no text to prepare: the input (standard input) is empty");
  DatasetMeta meta;
  meta.tokenizer = o.tokenizer;
  meta.format = o.format;
  // nanoGPT: train = data[:int(n * 0.9)]; moved back to a UTF-8 lead byte.
  uint64_t split = std::numeric_limits<uint64_t>::max();
  std::unique_ptr<detail::TokenSink> sink;
  if (o.format == "nanogpt") {
    split = static_cast<uint64_t>(static_cast<double>(total) * (1 - o.val_fraction));
    while (split > 0 && split < total && (byte_at(inputs, split) >> 6) == 0x2) --split;
    sink = detail::nanogpt_sink(dir, o.val_fraction, split, total);
  } else {
    sink = detail::shard_sink(dir, checked_shard_name(o, dir), o.shard_tokens);
  }
  std::optional<CharTokenizer> chars;
  std::optional<Tokenizer> bpe;
  if (o.tokenizer == "char") {
    chars = char_alphabet(inputs, starts);
    meta.vocab_size = chars->vocab_size();
    meta.alphabet = chars->alphabet();
  } else {
    bpe = Tokenizer::gpt2();
    meta.vocab_size = bpe->vocab_size();
  }
  if (meta.vocab_size > std::numeric_limits<uint16_t>::max() + 1) {
    throw ConfigError(fmt::format("vocabulary of {} ids does not fit uint16 token files (at most "
                                  "65536)", meta.vocab_size));
  }
  const int threads = o.threads > 0 ? o.threads : usable_cores();
  std::vector<TextPiece> batch;
  uint64_t bytes_done = 0;
  const auto run_batch = [&] {
    std::vector<std::string> texts;
    for (auto& piece : batch) texts.push_back(std::move(piece.text));
    std::vector<std::vector<int32_t>> ids;
    if (bpe) {
      ids = bpe->encode_batch(texts, false, threads);
    } else {
      for (const auto& text : texts) ids.push_back(chars->encode(text));
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const bool val = batch[i].offset >= split;
      // gpt2: <|endoftext|> between documents (nanogpt), before each (llmc, as fineweb.py)
      if (bpe && batch[i].first && (o.format == "llmc" || batch[i].document > 0)) {
        sink->add(val, {bpe->eot_token()});
      }
      sink->add(val, ids[i]);
      bytes_done += texts[i].size();
    }
    batch.clear();
    if (o.progress) o.progress(bytes_done, any_stdin ? 0 : total, sink->tokens());
  };
  read_pieces(inputs, std::max<std::size_t>(o.piece_bytes, 16), o.format == "nanogpt" ? std::vector<uint64_t>{split} : std::vector<uint64_t>{},
              [&](TextPiece&& piece) {
                batch.push_back(std::move(piece));
                if (batch.size() >= kPiecesPerThread * static_cast<std::size_t>(threads)) run_batch();
              });
  run_batch();
  if (sink->tokens() == 0) throw InputError("no text to prepare: the input (standard input) is empty");
  sink->finish(meta);
  write_meta(dir, meta, o);
  return meta;
}

}  // namespace

const std::vector<std::string>& data_format_names() {
  static const std::vector<std::string> names = {"nanogpt", "llmc"};
  return names;
}

DatasetMeta prepare_dataset(const std::vector<std::string>& inputs, const std::string& dir,
                            const PrepareOptions& options) {
  check_options(options);
  const std::vector<TextInput> listed = list_text_inputs(inputs);
  const bool any_stdin = std::any_of(listed.begin(), listed.end(), [](const TextInput& in) { return in.is_stdin(); });
  uint64_t total = 0;
  for (const auto& in : listed) total += in.size;
  if (total == 0 && !any_stdin) {
    throw InputError(fmt::format("no text to prepare: the input ({}) is empty",
                                 inputs.empty() ? "no files" : fmt::format("'{}'", fmt::join(inputs, "', '"))));
  }
  if (options.format == "llmc") checked_shard_name(options, dir);
  // The inputs are read while the folder is written: none may lie in it.
  // (A `dir` that is a file is make_output_dir's to refuse.)
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec) || std::filesystem::is_directory(dir, ec)) {
    for (const auto& in : listed) {
      if (!in.is_stdin()) refuse_input_inside(in.path, dir, "dataset folder");
    }
  }
  const bool made = make_output_dir(dir, "dataset folder");
  remove_stale_temporaries(dir);  // left by a run killed mid-write
  try {
    return prepare_into(listed, dir, options);
  } catch (...) {
    if (made) std::filesystem::remove(dir, ec);  // only if still empty
    throw;
  }
}

DatasetMeta prepare_dataset(const std::vector<std::string>& inputs, const std::string& dir,
                            const std::string& tokenizer, double val_fraction) {
  PrepareOptions options;
  options.tokenizer = tokenizer;
  options.val_fraction = val_fraction;
  return prepare_dataset(inputs, dir, options);
}

}  // namespace gpt2
