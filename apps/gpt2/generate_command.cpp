#include "apps/gpt2/generate_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/common/field_flags.h"
#include "gpt2/error.h"
#include "gpt2/generate/generate.h"
#include "gpt2/text/tokenizer.h"

namespace gpt2::app {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

SamplingOptions GenerateFlags::sampling(int64_t stop_token) const {
  return SamplingOptions()
      .max_new_tokens(max_new_tokens)
      .temperature(temperature)
      .top_k(top_k)
      .top_p(top_p)
      .seed(seed)
      .stop_token(stop_token)
      .use_cache(!no_cache)
      .cuda_graphs(!no_cuda_graphs)
      .draw(enum_from_name<Draw>(draw, "--draw"))
      .prompt_lookup(prompt_lookup);
}

int run_generate(const GenerateFlags& flags, std::ostream& text, std::ostream& stats) {
  const Tokenizer tokenizer =
      flags.bpe_dir.empty() ? Tokenizer::gpt2() : Tokenizer::from_dir(flags.bpe_dir);
  const torch::Device device = device_for(flags.device, flags.weights);
  const torch::ScalarType dtype = decode_dtype_for(flags.device, flags.dtype);
  GPT model = model_from(flags.checkpoint, flags.model, stats, mmap_from_string(flags.mmap));
  apply_weights(*model, flags.weights, stats);
  to_decode_device(*model, device, dtype, stats);
  const std::vector<int32_t> ids = tokenizer.encode(flags.prompt);
  if (ids.empty()) throw InputError("--prompt is empty: give at least one character of text");
  if (model->config.vocab_size() < tokenizer.vocab_size()) {
    throw InputError(fmt::format(
        "the model's vocabulary has {} tokens, fewer than GPT-2's tokenizer ({}): it was not "
        "trained on GPT-2 tokens", model->config.vocab_size(), tokenizer.vocab_size()));
  }
  const std::vector<int64_t> prompt(ids.begin(), ids.end());
  const SamplingOptions options = flags.sampling(tokenizer.eot_token());
  validate(options);  // before any text is printed

  fmt::print(text, "{}", flags.prompt);
  text.flush();
  const auto start = Clock::now();
  double first_token_s = 0;
  int64_t generated = 0;
  LookupStats lookup;
  generate(*model, {prompt}, options, [&](size_t, int64_t token) {
    if (generated++ == 0) first_token_s = seconds_since(start);
    if (token == tokenizer.eot_token()) return;
    text << tokenizer.decode_token(static_cast<int32_t>(token));
    text.flush();
  }, &lookup);
  const double total_s = seconds_since(start);
  fmt::print(text, "\n");
  // Tokens after the first, over the time after it: the decoding rate.
  const double rate = generated > 1 ? (generated - 1) / (total_s - first_token_s) : 0.0;
  fmt::print(stats,
             "generate  prompt {} tokens, generated {} tokens, first token {:.0f} ms, "
             "{:.1f} tokens/s ({})\n",
             prompt.size(), generated, 1000 * first_token_s, rate,
             options.prompt_lookup() > 0 ? fmt::format("KV cache, prompt lookup {}",
                                                       options.prompt_lookup())
             : !options.use_cache()      ? std::string("no cache: full recompute per token")
             : device.is_cuda()          ? fmt::format("KV cache, {}", options.cuda_graphs()
                                                                       ? "CUDA graphs"
                                                                       : "no CUDA graphs")
                                         : std::string("KV cache"));
  if (options.prompt_lookup() > 0) {
    fmt::print(stats,
               "lookup    {} tokens proposed, {} accepted ({:.0f}%); {} forwards for {} tokens "
               "({:.2f} per forward)\n",
               lookup.drafted, lookup.accepted,
               lookup.drafted ? 100.0 * lookup.accepted / lookup.drafted : 0.0, lookup.forwards,
               lookup.tokens, lookup.forwards ? double(lookup.tokens) / lookup.forwards : 0.0);
  }
  return 0;
}

void add_generate_command(CLI::App& app, int* rc) {
  auto flags = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand("generate", "Sample text from a model, streamed");
  // --seed is the sampler's here; a fresh model takes the default init seed.
  const auto model_options = flags->model.add_to(*cmd, {"init_seed"});
  CLI::Option* checkpoint = cmd->add_option(
      "--checkpoint,--model", flags->checkpoint,
      "Sample from this model file (checkpoint .pt, Hugging Face .safetensors or folder, llm.c "
      ".bin) instead of a fresh model");
  checkpoint->check(gpt2::app::non_empty_path());
  for (CLI::Option* option : model_options) checkpoint->excludes(option);
  cmd->add_option("--prompt", flags->prompt, "Text to continue")->required();
  // A bound a person can mean: 2^20 tokens is about 9 hours of GPT-2 124M here.
  cmd->add_option("--max-new-tokens", flags->max_new_tokens, "Tokens to add at most")
      ->check(gpt2::app::in_range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--temperature", flags->temperature, "Divides the logits; 0 is greedy")
      ->capture_default_str();
  cmd->add_option("--top-k", flags->top_k, "Keep the k most likely tokens (default: 200)");
  cmd->add_option("--top-p", flags->top_p, "Keep the most likely tokens up to this mass")
      ->capture_default_str();
  add_integer_flag(*cmd, "--seed", flags->seed, "Seed of the sampler");
  add_weights_flag(*cmd, flags->weights);
  add_device_flag(*cmd, flags->device);
  add_decode_dtype_flag(*cmd, flags->dtype);
  add_mmap_flag(*cmd, flags->mmap);
  cmd->add_option("--prompt-lookup", flags->prompt_lookup,
                  "Prompt-lookup decoding: propose up to K tokens from the context per step and "
                  "check them in one forward (greedy: needs --temperature 0)")
      ->check(gpt2::app::in_range(int64_t{0}, int64_t{64}));
  cmd->add_flag("--no-cache", flags->no_cache,
                "Recompute the whole context per token (nanoGPT's way) instead of a KV cache");
  add_no_cuda_graphs_flag(*cmd, flags->no_cuda_graphs);
  add_draw_flag(*cmd, flags->draw);
  cmd->add_option("--bpe-dir", flags->bpe_dir,
                  "Folder with GPT-2's encoder.json and vocab.bpe (default: the shipped copy)");
  cmd->callback([flags, rc] { *rc = run_generate(*flags, std::cout, std::cerr); });
}

}  // namespace gpt2::app
