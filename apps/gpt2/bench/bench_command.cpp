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
#include <optional>
#include <cstdlib>
#include <thread>
#include <vector>

#include "apps/gpt2/bench/bench_lookup.h"
#include "apps/gpt2/bench/bench_ops.h"
#include "apps/gpt2/bench/bench_products.h"
#include "apps/gpt2/bench/bench_stats.h"
#include "apps/gpt2/bench/bench_train.h"
#include "apps/gpt2/bench/train_sides.h"
#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/common/model_flags.h"
#include "gpt2/runtime/runtime.h"
#include "gpt2/error.h"
#include "gpt2/generate/generate.h"
#include "gpt2/io/model_source.h"
#include "gpt2/file/read_file.h"
#include "gpt2/generate/weight_format.h"
#include "gpt2/ops/settings.h"
#include "gpt2/text/tokenizer.h"

namespace gpt2::app {
namespace {

// Bytes/s at which `threads` threads read a 1 GiB buffer, far larger than
// any cache here, each its own slice, median of 5: the rate the weights can
// stream at during decoding. Each thread sums 64-bit words, so the loop is
// a plain vectorized load stream.
Stats read_bandwidth(int threads) {
  const size_t words = (size_t{1} << 30) / sizeof(uint64_t);
  std::vector<uint64_t> buffer(words, 1);  // written once, so every page is real
  std::vector<double> rates;
  std::vector<uint64_t> sums(threads);
  for (int r = 0; r < 5; ++r) {
    const double s = time_s([&] {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          const size_t begin = words * t / threads, end = words * (t + 1) / threads;
          uint64_t a = 0, b = 0, c = 0, d = 0;
          for (size_t i = begin; i + 4 <= end; i += 4) {
            a += buffer[i];
            b += buffer[i + 1];
            c += buffer[i + 2];
            d += buffer[i + 3];
          }
          sums[t] = a + b + c + d;
        });
      }
      for (auto& thread : pool) thread.join();
    });
    rates.push_back(words * sizeof(uint64_t) / s);
  }
  uint64_t total = 0;
  for (uint64_t v : sums) total += v;
  if (total != words) throw Error(fmt::format("read bandwidth: summed {} ones of {}", total, words));
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
  if (f.device != "cpu") return run_bench_generate_device(f, out);
  print_runtime(out);
  GPT model(GPTConfig::preset(f.preset));
  torch::manual_seed(0);
  auto prompt_tensor = torch::randint(model->config.vocab_size(), {f.prompt_tokens});
  const std::vector<int64_t> prompt(prompt_tensor.data_ptr<int64_t>(),
                                    prompt_tensor.data_ptr<int64_t>() + f.prompt_tokens);
  auto options = SamplingOptions().temperature(0).max_new_tokens(f.new_tokens);
  std::vector<WeightFormat> formats;
  for (const auto& w : f.weights) formats.push_back(weight_format_from_string(w));
  std::vector<std::vector<double>> cached(formats.size());
  std::vector<int64_t> bytes(formats.size());
  std::vector<double> recompute;
  for (int r = 0; r < f.repeats; ++r) {  // alternating, so drift hits every side
    for (size_t i = 0; i < formats.size(); ++i) {
      set_weight_format(*model, formats[i]);
      bytes[i] = decode_weight_bytes(*model);
      cached[i].push_back(f.new_tokens / time_s([&] { generate(*model, {prompt}, options); }));
    }
    set_weight_format(*model, WeightFormat::kFloat32);
    recompute.push_back(f.new_tokens / time_s([&] {
      generate(*model, {prompt}, SamplingOptions(options).use_cache(false));
    }));
  }
  const int threads = kernel_threads();
  const Stats bw = read_bandwidth(threads);
  fmt::print(out, "model     {} ({:.0f} MB of float32 weights), batch 1, prompt {} tokens, {} new "
                  "tokens, greedy, median of {} (min-max)\n",
             f.preset, 4.0 * model->num_parameters() / 1e6, f.prompt_tokens, f.new_tokens,
             f.repeats);
  fmt::print(out, "read bw   {:.1f} GB/s ({:.1f}-{:.1f}), {} threads reading 1 GiB\n",
             bw.median / 1e9, bw.min / 1e9, bw.max / 1e9, threads);
  fmt::print(out, "  {:<28} {:>10} {:>16} {:>10} {:>10} {:>9}\n", "", "tokens/s", "range",
             "MB/token", "bound", "vs bound");
  bool above = false;
  const auto row = [&](const std::string& name, const Stats& s, int64_t b) {
    const double bound = bw.median / static_cast<double>(b);  // every weight read once per token
    above = above || s.median > bound;
    fmt::print(out, "  {:<28} {:>10.1f} {:>7.1f}-{:<8.1f} {:>10.0f} {:>10.1f} {:>9}\n", name,
               s.median, s.min, s.max, b / 1e6, bound,
               s.median <= bound ? fmt::format("{:.0f}%", 100 * s.median / bound) : "ABOVE");
  };
  for (size_t i = 0; i < formats.size(); ++i) {
    row(fmt::format("KV cache, {} weights", f.weights[i]), stats(cached[i]), bytes[i]);
  }
  const int64_t fp32_bytes = 4 * model->num_parameters();
  row("no cache (full recompute)", stats(recompute), fp32_bytes);
  const double base = stats(cached[0]).median;
  for (size_t i = 1; i < formats.size(); ++i) {
    fmt::print(out, "speedup   {} / {} weights, KV cache: {:.2f}x\n", f.weights[i], f.weights[0],
               stats(cached[i]).median / base);
  }
  fmt::print(out, "speedup   KV cache / no cache ({} weights): {:.1f}x\n", f.weights[0],
             base / stats(recompute).median);
  if (above) {
    fmt::print(out, "warning   a side decoded faster than its bound allows: the read bandwidth "
                    "measured here understates the machine's\n");
  }
  return 0;
}

// Seconds Python's torch.jit.load takes to read `path`, in one python3
// process (its start and `import torch` not counted), median of `repeats`.
Stats python_jit_load(const std::string& path, int repeats) {
  const std::string command = fmt::format(
      "/usr/bin/python3 -c \"import sys, time, torch\n"
      "for _ in range({}):\n"
      "    t = time.perf_counter(); torch.jit.load(sys.argv[1]); "
      "print(time.perf_counter() - t)\" {}", repeats, shell_word(path));
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw FileError("cannot run python3 for torch.jit.load");
  std::vector<double> seconds;
  char line[256];
  while (std::fgets(line, sizeof line, pipe)) seconds.push_back(std::atof(line));
  if (::pclose(pipe) != 0 || seconds.empty()) {
    throw FileError(fmt::format("python3's torch.jit.load('{}') failed; --no-peer skips it", path));
  }
  return stats(seconds);
}

int run_bench_load(const std::vector<std::string>& paths, int repeats, bool no_peer,
                   Mmap mmap, std::ostream& out) {
  print_runtime(out);
  fmt::print(out, "load      median of {} loads after one untimed (files in the page cache), "
                  "alternating; --mmap {}\n", repeats, to_string(mmap));
  std::vector<std::vector<double>> seconds(paths.size());
  std::vector<std::string> formats(paths.size());
  for (int r = 0; r <= repeats; ++r) {
    for (size_t i = 0; i < paths.size(); ++i) {
      LoadedModel loaded;
      const double s =
          time_s([&] { loaded = load_model_file(paths[i], ModelSourceOptions().mmap(mmap)); });
      formats[i] = to_string(loaded.format);
      if (r > 0) seconds[i].push_back(s);
    }
  }
  std::optional<Stats> jit;
  const auto checkpoint = std::find(formats.begin(), formats.end(), "checkpoint");
  if (!no_peer && checkpoint != formats.end()) {
    jit = python_jit_load(paths[checkpoint - formats.begin()], repeats);
  }
  fmt::print(out, "  {:<40} {:<12} {:>8} {:>16} {:>14}\n", "file", "format", "s", "range",
             "vs jit.load");
  for (size_t i = 0; i < paths.size(); ++i) {
    const Stats l = stats(seconds[i]);
    fmt::print(out, "  {:<40} {:<12} {:>8.3f} {:>7.3f}-{:<8.3f} {:>14}\n", paths[i], formats[i],
               l.median, l.min, l.max, jit ? fmt::format("{:.2f}x", l.median / jit->median) : "");
  }
  if (jit) {
    fmt::print(out, "  {:<40} {:<12} {:>8.3f} {:>7.3f}-{:<8.3f}\n",
               "Python torch.jit.load of the checkpoint", "", jit->median, jit->min, jit->max);
  }
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
      ->check(gpt2::app::in_range(1, 1024))
      ->capture_default_str();
  g->add_option("--new-tokens", gen->new_tokens, "Tokens to decode")
      ->check(gpt2::app::in_range(1, 4096))
      ->capture_default_str();
  g->add_option("--repeats", gen->repeats, "Runs of each side")
      ->check(gpt2::app::in_range(1, 100))
      ->capture_default_str();
  CLI::Option* weights = g->add_option("--weights", gen->weights,
                                       "Weight formats side by side, the first the reference");
  weights->delimiter(',')
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}))
      ->capture_default_str();
  add_device_flag(*g, gen->device);
  g->add_option("--batch", gen->batches, "On a GPU: batch sizes side by side")
      ->delimiter(',')
      ->check(gpt2::app::in_range(1, 1024))
      ->capture_default_str();
  g->callback([gen, rc, weights] {
    gen->weights_given = weights->count() > 0;
    *rc = run_bench_generate(*gen, std::cout);
  });
  add_bench_train_command(*bench, rc);
  add_bench_products_command(*bench, rc);
  add_bench_lookup_command(*bench, rc);
  add_bench_ops_command(*bench, rc);
  auto load_paths = std::make_shared<std::vector<std::string>>();
  auto load_repeats = std::make_shared<int>(5);
  auto load_no_peer = std::make_shared<bool>(false);
  auto load_mmap = std::make_shared<std::string>("off");
  CLI::App* l = bench->add_subcommand(
      "load", "Seconds to load model files (any format), beside Python's torch.jit.load");
  l->add_option("files", *load_paths, "Model files (checkpoint, safetensors, llm.c)")->required();
  l->add_option("--repeats", *load_repeats, "Loads of each")->check(gpt2::app::in_range(1, 100))
      ->capture_default_str();
  l->add_flag("--no-peer", *load_no_peer, "Do not run Python's torch.jit.load");
  add_mmap_flag(*l, *load_mmap);
  l->callback([load_paths, load_repeats, load_no_peer, load_mmap, rc] {
    *rc = run_bench_load(*load_paths, *load_repeats, *load_no_peer, mmap_from_string(*load_mmap),
                         std::cout);
  });
  auto path = std::make_shared<std::string>();
  auto repeats = std::make_shared<int>(5);
  CLI::App* t = bench->add_subcommand("tokenize", "MB/s of the GPT-2 tokenizer on a file");
  t->add_option("file", *path, "Text file")->required();
  t->add_option("--repeats", *repeats, "Runs")->check(gpt2::app::in_range(1, 100))->capture_default_str();
  t->callback([path, repeats, rc] { *rc = run_bench_tokenize(*path, *repeats, std::cout); });
}

}  // namespace gpt2::app
