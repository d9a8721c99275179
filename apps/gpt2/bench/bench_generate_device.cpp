// `gpt2 bench generate --device cuda`: decoding tokens/s on a GPU at several
// batch sizes, each with its steps replayed from CUDA graphs and op by op.
// The CPU's bandwidth bound and weight formats do not apply there; the
// reference is the same model in PyTorch (tests/gpu/peer.py), which the GPU
// check script runs beside this.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <torch/cuda.h>

#include <ostream>
#include <string>
#include <vector>

#include "apps/gpt2/bench/bench_command.h"
#include "apps/gpt2/bench/bench_stats.h"
#include "apps/gpt2/common/model_flags.h"
#include "gpt2/generate/batch_decoder.h"
#include "gpt2/generate/generate.h"
#include "gpt2/model/gpt.h"
#include "gpt2/runtime/device_line.h"

namespace gpt2::app {
namespace {

// Whether decoding `prompt` with graphs on replays one, and if not why:
// two steps of a BatchDecoder asked for graphs.
std::string graphs_line(GPTImpl& model, const std::vector<int64_t>& prompt) {
  torch::NoGradGuard no_grad;
  BatchDecoder decoder(model, /*use_cache=*/true, DecodeSteps::kGraphed);
  decoder.add(prompt);
  for (int i = 0; i < 2; ++i) {
    const auto next = decoder.next_logits().argmax(-1).to(torch::kCPU);
    decoder.append({next.item<int64_t>()});
  }
  if (decoder.graphed()) return "replayed (the step captured once, after two warm-up steps)";
  return fmt::format("not replayed: {}", decoder.why_not_graphed());
}

}  // namespace

int run_bench_generate_device(const BenchGenerateFlags& f, std::ostream& out) {
  out << std::unitbuf;  // each line as soon as it is known, through a pipe too
  if (f.weights_given) {
    for (const auto& w : f.weights) refuse_packed_weights_off_cpu(f.device, w);
  }
  const torch::Device device = device_from_flag(f.device);
  const torch::ScalarType dtype = decode_dtype_for(f.device, f.dtype);
  torch::manual_seed(0);
  GPT model(GPTConfig::preset(f.preset));
  model->to(device, dtype);
  model->eval();  // the graphs probe decodes with dropout off, as generate() does
  const bool greedy = f.temperature == 0;
  fmt::print(out, "model     {} on {}, {} weights, prompt {} tokens, {} new tokens, {}, KV "
                  "cache, median of {} (min-max)\n", f.preset, device.str(), c10::toString(dtype),
             f.prompt_tokens, f.new_tokens,
             greedy ? std::string("greedy")
                    : fmt::format("drawn at temperature {}{}", f.temperature,
                                  f.top_k > 0 ? fmt::format(", top-k {}", f.top_k) : ""),
             f.repeats);
  fmt::print(out, "device    {}\n", device_line(device, dtype, "weights", model->config, 1,
                                                 f.prompt_tokens));
  auto ids = torch::randint(model->config.vocab_size(), {f.prompt_tokens});
  const std::vector<int64_t> prompt(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + f.prompt_tokens);
  bool any_graphs = false;
  for (const auto& g : f.graphs) any_graphs = any_graphs || g == "on";
  if (any_graphs) fmt::print(out, "graphs    {}\n", graphs_line(*model, prompt));
  auto options = SamplingOptions().temperature(f.temperature).max_new_tokens(f.new_tokens);
  if (f.top_k > 0) options.top_k(f.top_k);
  struct Side {
    int64_t batch;
    std::string graphs, draw;
    std::vector<double> rates;
  };
  // Greedy decoding draws nothing: one side per batch and graphs setting.
  const std::vector<std::string> draws = greedy ? std::vector<std::string>{"-"} : f.draws;
  std::vector<Side> sides;
  for (const int64_t b : f.batches) {
    for (const auto& g : f.graphs) {
      for (const auto& d : draws) sides.push_back({b, g, d, {}});
    }
  }
  for (const auto& g : f.graphs) {  // warm-up, each kind of step
    generate(*model, {prompt}, SamplingOptions(options).max_new_tokens(8).cuda_graphs(g == "on"));
  }
  for (int r = 0; r < f.repeats; ++r) {  // alternating, so drift hits every side
    for (Side& side : sides) {
      const std::vector<std::vector<int64_t>> prompts(static_cast<size_t>(side.batch), prompt);
      auto these = SamplingOptions(options).cuda_graphs(side.graphs == "on");
      if (!greedy) these.draw(enum_from_name<Draw>(side.draw, "--draw"));
      const double s = time_s([&] {
        generate(*model, prompts, these);
        torch::cuda::synchronize(device.index());
      });
      side.rates.push_back(static_cast<double>(side.batch * f.new_tokens) / s);
      fmt::print(out, "repeat {:<3} batch {:<5} graphs {:<3} draw {:<6} {:.1f} tokens/s\n", r + 1,
                 side.batch, side.graphs, side.draw, side.rates.back());
    }
  }
  fmt::print(out, "  {:<10} {:<7} {:<7} {:>12} {:>20} {:>10}\n", "batch", "graphs", "draw",
             "tokens/s", "range", "on/off");
  for (const Side& side : sides) {
    const Stats s = stats(side.rates);
    std::string ratio;
    if (side.graphs == "on") {
      for (const Side& other : sides) {
        if (other.batch == side.batch && other.graphs == "off" && other.draw == side.draw) {
          ratio = fmt::format("{:.2f}x", s.median / stats(other.rates).median);
        }
      }
    }
    fmt::print(out, "  {:<10} {:<7} {:<7} {:>12.1f} {:>9.1f}-{:<10.1f} {:>10}\n", side.batch,
               side.graphs, side.draw, s.median, s.min, s.max, ratio);
  }
  return 0;
}

}  // namespace gpt2::app
