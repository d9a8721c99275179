#include "apps/gpt2/bench/bench_lookup.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <iostream>
#include <memory>
#include <vector>

#include "apps/gpt2/bench/bench_stats.h"
#include "apps/gpt2/common/cli_main.h"
#include "gpt2/error.h"
#include "gpt2/file/read_file.h"
#include "gpt2/generate/generate.h"
#include "gpt2/io/model_source.h"
#include "gpt2/runtime/runtime.h"
#include "gpt2/text/tokenizer.h"

namespace gpt2::app {

int run_bench_lookup(const BenchLookupFlags& f, std::ostream& out) {
  const Tokenizer tokenizer = Tokenizer::gpt2();
  const std::string path = f.prompt_file.empty() ? GPT2_SHIPPED_CORPUS : f.prompt_file;
  const std::vector<int32_t> ids = tokenizer.encode(read_file(path));
  if (static_cast<int64_t>(ids.size()) < f.prompt_tokens) {
    throw InputError(fmt::format("--prompt-file {} holds {} tokens, fewer than --prompt-tokens {}",
                                 path, ids.size(), f.prompt_tokens));
  }
  const std::vector<int64_t> prompt(ids.begin(), ids.begin() + f.prompt_tokens);
  GPT model = load_model(f.model);
  if (model->config.vocab_size() < tokenizer.vocab_size()) {
    throw InputError(fmt::format("--model {} has a vocabulary of {} tokens, fewer than GPT-2's "
                                 "({}): the prompt is GPT-2 tokens", f.model,
                                 model->config.vocab_size(), tokenizer.vocab_size()));
  }
  // No stop token: both sides make exactly new_tokens tokens.
  const auto plain = SamplingOptions().temperature(0).max_new_tokens(f.new_tokens);
  const auto lookup = SamplingOptions(plain).prompt_lookup(f.draft);

  std::vector<double> plain_rate, lookup_rate;
  std::vector<int64_t> plain_out, lookup_out;
  LookupStats counts;
  for (int r = 0; r < f.repeats; ++r) {  // alternating, so drift hits both sides
    plain_rate.push_back(f.new_tokens / time_s([&] {
      plain_out = generate(*model, {prompt}, plain)[0];
    }));
    counts = LookupStats{};
    lookup_rate.push_back(f.new_tokens / time_s([&] {
      lookup_out = generate(*model, {prompt}, lookup, {}, &counts)[0];
    }));
  }

  fmt::print(out, "runtime   {}\n", runtime_line(runtime_info()));
  fmt::print(out, "model     {} ({:.1f}M parameters), batch 1, prompt {} tokens of {}, {} new "
                  "tokens, greedy, drafts of up to {}, median of {} (min-max)\n",
             f.model, model->num_parameters() / 1e6, prompt.size(), path, f.new_tokens, f.draft,
             f.repeats);
  const int64_t block = model->config.block_size();
  if (f.prompt_tokens + f.new_tokens > block) {
    fmt::print(out, "note      prompt + new tokens ({}) pass the block size ({}): from there on "
                    "nothing is proposed (positions shift)\n", f.prompt_tokens + f.new_tokens, block);
  }
  const Stats p = stats(plain_rate), l = stats(lookup_rate);
  fmt::print(out, "  {:<16} {:>10} {:>16} {:>9}\n", "", "tokens/s", "range", "forwards");
  fmt::print(out, "  {:<16} {:>10.1f} {:>7.1f}-{:<8.1f} {:>9}\n", "plain greedy", p.median, p.min,
             p.max, f.new_tokens);
  fmt::print(out, "  {:<16} {:>10.1f} {:>7.1f}-{:<8.1f} {:>9}\n", "prompt lookup", l.median, l.min,
             l.max, counts.forwards);
  fmt::print(out, "drafts    {} tokens proposed, {} accepted ({:.0f}%); {:.2f} tokens per forward\n",
             counts.drafted, counts.accepted,
             counts.drafted ? 100.0 * counts.accepted / counts.drafted : 0.0,
             counts.forwards ? static_cast<double>(counts.tokens) / counts.forwards : 0.0);
  fmt::print(out, "speedup   prompt lookup / plain greedy: {:.2f}x\n", l.median / p.median);
  for (size_t i = 0; i < plain_out.size() || i < lookup_out.size(); ++i) {
    if (i >= plain_out.size() || i >= lookup_out.size() || plain_out[i] != lookup_out[i]) {
      fmt::print(out, "text      DIFFERENT from token {} on: prompt lookup changed greedy "
                      "decoding's output\n", i);
      return 1;
    }
  }
  fmt::print(out, "text      identical ({} tokens): {:?}\n", plain_out.size(),
             tokenizer.decode(std::vector<int32_t>(plain_out.begin(), plain_out.end())));
  return 0;
}

void add_bench_lookup_command(CLI::App& bench, int* rc) {
  auto f = std::make_shared<BenchLookupFlags>();
  CLI::App* cmd = bench.add_subcommand(
      "lookup", "Prompt-lookup decoding against plain greedy: tokens/s, acceptance, same text");
  cmd->add_option("--model", f->model, "Model file with GPT-2's vocabulary (any format)")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("--prompt-file", f->prompt_file,
                  "Text whose first tokens are the prompt (default: the shipped corpus)");
  cmd->add_option("--prompt-tokens", f->prompt_tokens, "Prompt length")
      ->check(gpt2::app::in_range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--new-tokens", f->new_tokens, "Tokens to decode")
      ->check(gpt2::app::in_range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--draft", f->draft, "Tokens proposed per step at most")
      ->check(gpt2::app::in_range(1, 64))
      ->capture_default_str();
  cmd->add_option("--repeats", f->repeats, "Runs of each side")
      ->check(gpt2::app::in_range(1, 100))
      ->capture_default_str();
  cmd->callback([f, rc] { *rc = run_bench_lookup(*f, std::cout); });
}

}  // namespace gpt2::app
