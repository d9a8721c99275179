// `gpt2 bench generate` on the CPU: greedy decoding tokens/s with the KV
// cache in each weight format and without the cache, against the bound the
// machine's read bandwidth sets (every weight read once per token).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "apps/gpt2/bench/bench_command.h"
#include "apps/gpt2/bench/bench_stats.h"
#include "apps/gpt2/common/model_flags.h"
#include "gpt2/error.h"
#include "gpt2/generate/generate.h"
#include "gpt2/generate/weight_format.h"
#include "gpt2/model/gpt.h"
#include "gpt2/ops/settings.h"

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

}  // namespace

int run_bench_generate(const BenchGenerateFlags& f, std::ostream& out) {
  out << std::unitbuf;  // each line as soon as it is known, through a pipe too
  decode_dtype_for(f.device, f.dtype);  // a half dtype on the CPU is refused by name
  if (f.device != "cpu") return run_bench_generate_device(f, out);
  print_runtime(out);
  GPT model(GPTConfig::preset(f.preset));
  fmt::print(out, "model     {} ({:.0f} MB of float32 weights), batch 1, prompt {} tokens, {} new "
                  "tokens, greedy, median of {} (min-max)\n",
             f.preset, 4.0 * model->num_parameters() / 1e6, f.prompt_tokens, f.new_tokens,
             f.repeats);
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
    std::string line = fmt::format("repeat {:<3} KV cache", r + 1);
    for (size_t i = 0; i < formats.size(); ++i) {
      line += fmt::format("{} {} {:.1f}", i ? "," : "", f.weights[i], cached[i].back());
    }
    fmt::print(out, "{} tokens/s; no cache {:.1f}\n", line, recompute.back());
  }
  const int threads = kernel_threads();
  const Stats bw = read_bandwidth(threads);
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

}  // namespace gpt2::app
