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
#include "apps/gpt2/bench/shell_command.h"
#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/common/model_flags.h"
#include "apps/gpt2/common/train_presets.h"
#include "gpt2/runtime/runtime.h"
#include "gpt2/error.h"
#include "gpt2/io/model_source.h"
#include "gpt2/file/read_file.h"
#include "gpt2/model/config.h"
#include "gpt2/ops/settings.h"
#include "gpt2/text/tokenizer.h"

namespace gpt2::app {
void print_runtime(std::ostream& out) {
  const RuntimeInfo rt = runtime_info();
  fmt::print(out, "machine   {} cores; BLAS {} ({} threads); torch intra-op threads {}\n",
             std::thread::hardware_concurrency(), rt.blas_kind, rt.blas_threads,
             rt.torch_threads);
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

void add_step_shape_flags(CLI::App& cmd, std::string& preset, int64_t& batch, int64_t& seq) {
  cmd.add_option("--preset", preset, "Model, as `gpt2 train --preset` builds it")
      ->check(CLI::IsMember(train_preset_names()))->capture_default_str();
  cmd.add_option("--batch-size", batch, "B")->check(gpt2::app::in_range(1, 1024))->capture_default_str();
  cmd.add_option("--seq", seq, "T")->check(gpt2::app::in_range(1, 1024))->capture_default_str();
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
  add_decode_dtype_flag(*g, gen->dtype);
  g->add_option("--cuda-graphs", gen->graphs,
                "On a GPU: decoding steps replayed from CUDA graphs (on), op by op (off), or "
                "both side by side")
      ->delimiter(',')
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  g->add_option("--temperature", gen->temperature,
                "On a GPU: 0 decodes greedily; above, tokens are drawn at this temperature")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  g->add_option("--top-k", gen->top_k, "On a GPU, when drawing: keep the k most likely (0: all)")
      ->check(gpt2::app::in_range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  g->add_option("--draw", gen->draws,
                "On a GPU, when drawing: where tokens are drawn (auto, host, device), side by side")
      ->delimiter(',')
      ->check(CLI::IsMember({"auto", "host", "device"}))
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
