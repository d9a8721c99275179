// `gpt2 bench generate --device cuda`: decoding tokens/s on a GPU at several
// batch sizes. The CPU's bandwidth bound and weight formats do not apply
// there; the reference is the same model in PyTorch (tests/gpu/peer.py),
// which the GPU check script runs beside this.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <torch/cuda.h>

#include <ostream>
#include <vector>

#include "apps/gpt2/bench/bench_command.h"
#include "apps/gpt2/bench/bench_stats.h"
#include "apps/gpt2/common/model_flags.h"
#include "gpt2/generate/generate.h"
#include "gpt2/model/gpt.h"
#include "gpt2/runtime/device_line.h"

namespace gpt2::app {

int run_bench_generate_device(const BenchGenerateFlags& f, std::ostream& out) {
  out << std::unitbuf;  // each line as soon as it is known, through a pipe too
  if (f.weights_given) {
    for (const auto& w : f.weights) refuse_packed_weights_off_cpu(f.device, w);
  }
  const torch::Device device = device_from_flag(f.device);
  torch::manual_seed(0);
  GPT model(GPTConfig::preset(f.preset));
  model->to(device);
  fmt::print(out, "model     {} on {}, float32, prompt {} tokens, {} new tokens, greedy, KV cache, "
                  "median of {} (min-max)\n", f.preset, device.str(), f.prompt_tokens,
             f.new_tokens, f.repeats);
  fmt::print(out, "device    {}\n", device_line(device, torch::kFloat, "weights", model->config, 1,
                                                 f.prompt_tokens));
  auto ids = torch::randint(model->config.vocab_size(), {f.prompt_tokens});
  const std::vector<int64_t> prompt(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + f.prompt_tokens);
  const auto options = SamplingOptions().temperature(0).max_new_tokens(f.new_tokens);
  std::vector<std::vector<double>> rates(f.batches.size());
  generate(*model, {prompt}, SamplingOptions(options).max_new_tokens(8));  // warm-up
  for (int r = 0; r < f.repeats; ++r) {  // alternating, so drift hits every side
    for (size_t i = 0; i < f.batches.size(); ++i) {
      const std::vector<std::vector<int64_t>> prompts(static_cast<size_t>(f.batches[i]), prompt);
      const double s = time_s([&] {
        generate(*model, prompts, options);
        torch::cuda::synchronize();
      });
      rates[i].push_back(static_cast<double>(f.batches[i] * f.new_tokens) / s);
      fmt::print(out, "repeat {:<3} batch {:<5} {:.1f} tokens/s\n", r + 1, f.batches[i],
                 rates[i].back());
    }
  }
  fmt::print(out, "  {:<10} {:>12} {:>20}\n", "batch", "tokens/s", "range");
  for (size_t i = 0; i < f.batches.size(); ++i) {
    const Stats s = stats(rates[i]);
    fmt::print(out, "  {:<10} {:>12.1f} {:>9.1f}-{:<10.1f}\n", f.batches[i], s.median, s.min, s.max);
  }
  return 0;
}

}  // namespace gpt2::app
