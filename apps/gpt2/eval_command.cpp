#include "apps/gpt2/eval_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <iostream>
#include <memory>

#include "gpt2/error.h"
#include "gpt2/file/read_file.h"
#include "gpt2/io/model_source.h"
#include "gpt2/text/tokenizer.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/evaluate.h"
#include "gpt2/train/token_loader.h"

namespace gpt2::app {
namespace {

void print_score(const TokenScore& s, std::ostream& out) {
  fmt::print(out, "scored    {} tokens\n", s.tokens);
  fmt::print(out, "loss      {:.4f} nats per token\n", s.mean_loss());
  fmt::print(out, "perplexity {:.4f}\n", s.perplexity());
}

}  // namespace

int run_eval(const EvalFlags& flags, std::ostream& out) {
  if (flags.text.empty() && flags.data.empty()) {
    throw ConfigError("nothing to evaluate: give --text FILE or --data DIR");
  }
  LoadedModel loaded = load_model_file(flags.model);
  GPT& model = loaded.model;
  for (const auto& note : loaded.notes) fmt::print(out, "note      {}\n", note);
  fmt::print(out, "model     {} ({}): {}\n", flags.model, to_string(loaded.format),
             to_string(model->config));
  if (flags.text.empty()) {
    const TokenFile file(flags.data + "/" + flags.split + ".bin");
    fmt::print(out, "split     {}: {} tokens in windows of {}\n", file.path(), file.size(),
               model->config.block_size());
    print_score(split_score(*model, file.data(), file.size()), out);
    return 0;
  }
  std::vector<int32_t> ids;
  std::string tokenizer = "gpt2";
  const std::string text = read_file(flags.text, "text");
  if (!flags.data.empty()) {
    const DatasetMeta meta = read_dataset_meta(flags.data);
    tokenizer = meta.tokenizer;
    ids = text_codec(meta).encode(text);
  } else {
    const Tokenizer bpe = flags.bpe_dir.empty() ? Tokenizer::gpt2() : Tokenizer::from_dir(flags.bpe_dir);
    ids = bpe.encode(text);
  }
  const int64_t window = flags.window > 0 ? flags.window : model->config.block_size();
  const int64_t stride = flags.stride > 0 ? flags.stride : std::max<int64_t>(1, window / 2);
  fmt::print(out, "text      {}: {} tokens ({} tokenizer), window {}, stride {}\n", flags.text,
             ids.size(), tokenizer, window, stride);
  print_score(strided_score(*model, ids, stride, window), out);
  return 0;
}

void add_eval_command(CLI::App& app, int* rc) {
  auto flags = std::make_shared<EvalFlags>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Perplexity of a text, or the loss over a whole prepared split, under a model");
  cmd->add_option("--model", flags->model,
                  "The model file (checkpoint .pt, Hugging Face .safetensors or folder, llm.c .bin)")
      ->required();
  cmd->add_option("--text", flags->text,
                  "Text to score by the strided sliding window (GPT-2's BPE unless --data)");
  cmd->add_option("--data", flags->data,
                  "Prepared data folder: the loss over --split, or the tokenizer for --text");
  cmd->add_option("--split", flags->split, "Which split of --data: val or train")
      ->check(CLI::IsMember({"val", "train"}))
      ->capture_default_str();
  cmd->add_option("--window", flags->window, "Tokens per window (default: the model's block size)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  cmd->add_option("--stride", flags->stride, "Tokens between window starts (default: half the window)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--bpe-dir", flags->bpe_dir,
                  "Folder with GPT-2's encoder.json and vocab.bpe (default: the shipped copy)");
  cmd->callback([flags, rc] { *rc = run_eval(*flags, std::cout); });
}

}  // namespace gpt2::app
