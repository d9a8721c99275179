#include "apps/gpt2/bench/bench_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <thread>
#include <vector>

#include "apps/gpt2/bench/bench_train.h"
#include "apps/gpt2/common/runtime.h"
#include "gpt2/error.h"
#include "gpt2/generate/generate.h"
#include "gpt2/file/read_file.h"
#include "gpt2/text/tokenizer.h"

namespace gpt2::app {
namespace {

using Clock = std::chrono::steady_clock;

template <class F>
double time_s(F&& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Stats {
  double median, min, max;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

// Bytes/s at which torch reads a 512 MiB float tensor (a sum), median of 5:
// the rate the weights can stream at during decoding.
Stats read_bandwidth() {
  auto big = torch::ones({128 * 1024 * 1024}, torch::kFloat);
  std::vector<double> rates;
  for (int i = 0; i < 5; ++i) {
    rates.push_back(big.nbytes() / time_s([&] { big.sum().item<float>(); }));
  }
  return stats(rates);
}

void print_runtime(std::ostream& out) {
  const RuntimeInfo rt = runtime_info();
  fmt::print(out, "machine   {} cores; BLAS {} ({} threads); torch intra-op threads {}\n",
             std::thread::hardware_concurrency(), rt.blas_kind, rt.blas_threads,
             rt.torch_threads);
}

}  // namespace

int run_bench_generate(const BenchGenerateFlags& f, std::ostream& out) {
  print_runtime(out);
  GPT model(GPTConfig::preset(f.preset));
  torch::manual_seed(0);
  auto prompt_tensor = torch::randint(model->config.vocab_size(), {f.prompt_tokens});
  const std::vector<int64_t> prompt(prompt_tensor.data_ptr<int64_t>(),
                                    prompt_tensor.data_ptr<int64_t>() + f.prompt_tokens);
  auto options = SamplingOptions().temperature(0).max_new_tokens(f.new_tokens);
  std::vector<double> cached, recompute;
  for (int r = 0; r < f.repeats; ++r) {  // alternating, so drift hits both
    cached.push_back(f.new_tokens / time_s([&] { generate(*model, {prompt}, options); }));
    recompute.push_back(f.new_tokens /
                        time_s([&] { generate(*model, {prompt}, SamplingOptions(options).use_cache(false)); }));
  }
  // Every weight is read once per decoded token (wte = lm_head once).
  const double weight_bytes = 4.0 * model->num_parameters();
  const Stats bw = read_bandwidth();
  const Stats c = stats(cached), n = stats(recompute);
  const double bound = bw.median / weight_bytes;
  fmt::print(out, "model     {} ({:.0f} MB of float32 weights), batch 1, prompt {} tokens, {} new "
                  "tokens, greedy, median of {} (min-max)\n",
             f.preset, weight_bytes / 1e6, f.prompt_tokens, f.new_tokens, f.repeats);
  fmt::print(out, "read bw   {:.1f} GB/s ({:.1f}-{:.1f}), torch sum over 512 MiB\n",
             bw.median / 1e9, bw.min / 1e9, bw.max / 1e9);
  fmt::print(out, "  {:<28} {:>10} {:>18} {:>10}\n", "", "tokens/s", "range", "vs bound");
  fmt::print(out, "  {:<28} {:>10.1f} {:>8.1f}-{:<9.1f} {:>9.0f}%\n", "KV cache", c.median, c.min,
             c.max, 100 * c.median / bound);
  fmt::print(out, "  {:<28} {:>10.1f} {:>8.1f}-{:<9.1f} {:>9.0f}%\n", "no cache (full recompute)",
             n.median, n.min, n.max, 100 * n.median / bound);
  fmt::print(out, "  {:<28} {:>10.1f}\n", "bandwidth bound", bound);
  fmt::print(out, "speedup   KV cache / no cache: {:.1f}x\n", c.median / n.median);
  return 0;
}

int run_bench_tokenize(const std::string& path, int repeats, std::ostream& out) {
  const std::string text = read_file(path);
  const Tokenizer tokenizer = Tokenizer::gpt2();
  size_t tokens = 0;
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    rates.push_back(text.size() / time_s([&] { tokens = tokenizer.encode(text).size(); }));
  }
  const Stats s = stats(rates);
  fmt::print(out, "tokenize  {} ({} bytes -> {} tokens), one thread: {:.1f} MB/s ({:.1f}-{:.1f}), "
                  "median of {}\n",
             path, text.size(), tokens, s.median / 1e6, s.min / 1e6, s.max / 1e6, repeats);
  return 0;
}

void add_bench_command(CLI::App& app, int* rc) {
  CLI::App* bench = app.add_subcommand("bench", "Speed figures with a same-run reference");
  bench->require_subcommand(1);
  auto gen = std::make_shared<BenchGenerateFlags>();
  CLI::App* g = bench->add_subcommand(
      "generate", "Decoding tokens/s with and without the KV cache, against the bandwidth bound");
  g->add_option("--preset", gen->preset, "Model size")
      ->check(CLI::IsMember(GPTConfig::preset_names()))
      ->capture_default_str();
  g->add_option("--prompt-tokens", gen->prompt_tokens, "Prompt length")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  g->add_option("--new-tokens", gen->new_tokens, "Tokens to decode")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  g->add_option("--repeats", gen->repeats, "Runs of each side")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  g->callback([gen, rc] { *rc = run_bench_generate(*gen, std::cout); });
  add_bench_train_command(*bench, rc);
  auto path = std::make_shared<std::string>();
  auto repeats = std::make_shared<int>(5);
  CLI::App* t = bench->add_subcommand("tokenize", "MB/s of the GPT-2 tokenizer on a file");
  t->add_option("file", *path, "Text file")->required();
  t->add_option("--repeats", *repeats, "Runs")->check(CLI::Range(1, 100))->capture_default_str();
  t->callback([path, repeats, rc] { *rc = run_bench_tokenize(*path, *repeats, std::cout); });
}

}  // namespace gpt2::app
