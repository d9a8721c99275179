#include "apps/gpt2/eval_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>
#include <string_view>

#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/common/model_flags.h"
#include "gpt2/error.h"
#include "gpt2/file/read_file.h"
#include "gpt2/io/model_source.h"
#include "gpt2/text/tokenizer.h"
#include "gpt2/train/choices.h"
#include "gpt2/train/data/data_folder.h"
#include "gpt2/train/data/shard_file.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/evaluate.h"
#include "gpt2/train/token_loader.h"

namespace gpt2::app {
namespace {

void print_score(const TokenScore& s, std::ostream& out) {
  fmt::print(out, "scored    {} tokens\n", s.tokens);
  fmt::print(out, "loss      {:.6f} nats per token\n", s.mean_loss());
  fmt::print(out, "perplexity {:.4f}\n", s.perplexity());
}

// The tokenizer of --text and --choices: the data's with --data, else
// GPT-2's BPE.
struct Encoder {
  std::string name;
  std::function<std::vector<int32_t>(std::string_view)> encode;
};

Encoder encoder(const EvalFlags& flags) {
  if (!flags.data.empty()) {
    const DatasetMeta meta = read_dataset_meta(flags.data);
    return {meta.tokenizer, text_codec(meta).encode};
  }
  auto bpe = std::make_shared<const Tokenizer>(
      flags.bpe_dir.empty() ? Tokenizer::gpt2() : Tokenizer::from_dir(flags.bpe_dir));
  return {"gpt2", [bpe](std::string_view text) { return bpe->encode(text); }};
}

void eval_choices(const EvalFlags& flags, GPTImpl& model, std::ostream& out) {
  std::vector<ChoiceItem> items = read_choices(flags.choices);
  const auto total = static_cast<int64_t>(items.size());
  if (flags.max_items > 0 && flags.max_items < total) items.resize(flags.max_items);
  const Encoder enc = encoder(flags);
  size_t fewest = items[0].endings.size(), most = fewest;
  for (const auto& item : items) {
    fewest = std::min(fewest, item.endings.size());
    most = std::max(most, item.endings.size());
  }
  fmt::print(out, "choices   {}: {} items of {}{}, {} endings each ({} tokenizer)\n", flags.choices,
             items.size(), total, flags.max_items > 0 && flags.max_items < total ? " (the first)" : "",
             fewest == most ? std::to_string(most) : fmt::format("{}-{}", fewest, most), enc.name);
  out.flush();
  // A live count on a terminal: a HellaSwag pass takes an hour on 2 cores.
  const bool live = ::isatty(STDERR_FILENO) != 0;
  const auto n = static_cast<int64_t>(items.size());
  const ChoiceResult r = score_choices(model, items, enc.encode, [&](int64_t done) {
    if (live && (done % 10 == 0 || done == n)) fmt::print(stderr, "\r{} of {} items", done, n);
  });
  if (live) fmt::print(stderr, "\n");
  fmt::print(out, "acc       {:.4f} ({} of {}: the ending of lowest summed loss)\n", r.acc(),
             r.correct, r.count);
  fmt::print(out, "acc_norm  {:.4f} ({} of {}: the ending of lowest mean loss per token)\n",
             r.acc_norm(), r.correct_norm, r.count);
}

}  // namespace

int run_eval(const EvalFlags& flags, std::ostream& out) {
  if (flags.text.empty() && flags.data.empty() && flags.choices.empty()) {
    throw ConfigError("nothing to evaluate: give --text FILE, --choices FILE or --data DIR");
  }
  if (!flags.text.empty() && !flags.choices.empty()) {
    throw ConfigError("give one of --text and --choices, not both");
  }
  const torch::Device device = device_for(flags.device, flags.weights);
  const torch::ScalarType dtype = decode_dtype_for(flags.device, flags.dtype);
  LoadedModel loaded =
      load_model_file(flags.model, ModelSourceOptions().mmap(mmap_from_string(flags.mmap)));
  GPT& model = loaded.model;
  to_decode_device(*model, device, dtype, out);
  for (const auto& note : loaded.notes) fmt::print(out, "note      {}\n", note);
  fmt::print(out, "model     {} ({}): {}\n", flags.model, to_string(loaded.format),
             to_string(model->config));
  apply_weights(*model, flags.weights, out);
  if (!flags.choices.empty()) {
    eval_choices(flags, *model, out);
    return 0;
  }
  if (flags.text.empty()) {
    const DatasetMeta meta = read_dataset_meta(flags.data);
    check_data_for_model(meta, flags.data, model->config.vocab_size(), flags.model);
    fmt::print(out, "data      {} ({})\n", flags.data, describe_dataset(meta));
    if (data_layout(flags.data) == DataLayout::kShards) {
      // Each shard in non-overlapping windows: every token but a shard's first.
      const auto paths = list_shards(flags.data, flags.split);
      if (paths.empty()) {
        throw FileError(fmt::format("'{}' has no {} shard (*_{}_*.bin or .npy)", flags.data,
                                    flags.split, flags.split));
      }
      TokenScore total;
      int64_t tokens = 0;
      for (const auto& path : paths) {
        const ShardFile shard(path);
        const TokenScore s = split_score(*model, shard.data(), shard.size());
        total.nll += s.nll;
        total.tokens += s.tokens;
        tokens += shard.size();
      }
      fmt::print(out, "split     {} ({} {} shard{}): {} tokens in windows of {}\n", flags.data,
                 paths.size(), flags.split, paths.size() == 1 ? "" : "s", tokens,
                 model->config.block_size());
      print_score(total, out);
      return 0;
    }
    const TokenFile file(flags.data + "/" + flags.split + ".bin");
    fmt::print(out, "split     {}: {} tokens in windows of {}\n", file.path(), file.size(),
               model->config.block_size());
    print_score(split_score(*model, file.data(), file.size()), out);
    return 0;
  }
  const std::string text = read_file(flags.text, "text");
  const Encoder enc = encoder(flags);
  const std::vector<int32_t> ids = enc.encode(text);
  const int64_t window = flags.window > 0 ? flags.window : model->config.block_size();
  const int64_t stride = flags.stride > 0 ? flags.stride : std::max<int64_t>(1, window / 2);
  fmt::print(out, "text      {}: {} tokens ({} tokenizer), window {}, stride {}\n", flags.text,
             ids.size(), enc.name, window, stride);
  // A live count on a terminal: a long text takes minutes on 2 cores.
  const bool live = ::isatty(STDERR_FILENO) != 0;
  const TokenScore score = strided_score(*model, ids, stride, window, [&](int64_t done, int64_t total) {
    if (live) fmt::print(stderr, "\r{} of {} tokens", done, total);
  });
  if (live) fmt::print(stderr, "\n");
  print_score(score, out);
  return 0;
}

void add_eval_command(CLI::App& app, int* rc) {
  auto flags = std::make_shared<EvalFlags>();
  CLI::App* cmd = app.add_subcommand(
      "eval",
      "Perplexity of a text, the loss over a whole prepared split, or multiple-choice accuracy");
  add_weights_flag(*cmd, flags->weights);
  add_device_flag(*cmd, flags->device);
  add_decode_dtype_flag(*cmd, flags->dtype);
  add_mmap_flag(*cmd, flags->mmap);
  cmd->add_option("--model", flags->model,
                  "The model file (checkpoint .pt, Hugging Face .safetensors or folder, llm.c .bin)")
      ->required();
  cmd->add_option("--text", flags->text,
                  "Text to score by the strided sliding window (GPT-2's BPE unless --data)");
  cmd->add_option("--choices", flags->choices,
                  "JSON Lines of {\"ctx\", \"endings\", \"label\"} (HellaSwag's): acc and acc_norm");
  cmd->add_option("--max-items", flags->max_items, "Score only the first N items of --choices")
      ->check(gpt2::app::in_range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--data", flags->data,
                  "Prepared data folder: the loss over --split, or the tokenizer for --text and "
                  "--choices");
  cmd->add_option("--split", flags->split, "Which split of --data: val or train")
      ->check(CLI::IsMember({"val", "train"}))
      ->capture_default_str();
  cmd->add_option("--window", flags->window, "Tokens per window (default: the model's block size)")
      ->check(gpt2::app::in_range(int64_t{2}, int64_t{1} << 20));
  cmd->add_option("--stride", flags->stride, "Tokens between window starts (default: half the window)")
      ->check(gpt2::app::in_range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--bpe-dir", flags->bpe_dir,
                  "Folder with GPT-2's encoder.json and vocab.bpe (default: the shipped copy)");
  cmd->callback([flags, rc] { *rc = run_eval(*flags, std::cout); });
}

}  // namespace gpt2::app
