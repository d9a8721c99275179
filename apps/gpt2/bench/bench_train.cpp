#include "apps/gpt2/bench/bench_train.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <sys/resource.h>
#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <memory>
#include <vector>

#include "gpt2/runtime/device_line.h"
#include "gpt2/runtime/runtime.h"
#include "apps/gpt2/bench/bench_stats.h"
#include "apps/gpt2/bench/kernel_profile.h"
#include "apps/gpt2/bench/product_peaks.h"
#include "apps/gpt2/bench/step_floors.h"
#include "apps/gpt2/bench/train_sides.h"
#include "apps/gpt2/common/model_flags.h"
#include "apps/gpt2/common/train_presets.h"
#include "apps/bench/step_phases.h"
#include "gpt2/error.h"
#include "gpt2/model/gpt.h"
#include "gpt2/ops/ops.h"
#include "gpt2/ops/settings.h"
#include "gpt2/train/optim.h"

namespace gpt2::app {
namespace {

double max_rss_bytes() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss * 1024.0;
}

// The C++ side's model, optimizer and batch, as `gpt2 train` makes them.
struct CppSide {
  GPT model{nullptr};
  std::unique_ptr<FusedAdamW> opt;
  torch::Tensor x, y;
  std::vector<torch::Tensor> params;
};

CppSide cpp_side(const GPTConfig& config, const BenchTrainFlags& f, const torch::Device& device) {
  torch::manual_seed(0);
  CppSide s;
  s.model = GPT(config);
  s.model->to(device);
  s.model->train();
  s.opt = configure_optimizers(
      *s.model, torch::optim::AdamWOptions(6e-4).betas({0.9, 0.95}).weight_decay(0.1));
  s.x = torch::randint(config.vocab_size(), {f.batch, f.seq}).to(device);
  s.y = torch::randint(config.vocab_size(), {f.batch, f.seq}).to(device);
  s.params = s.model->unique_parameters();
  return s;
}

// The C++ side's step, `warmup` untimed then `steps` timed (bench/step_phases.h).
// `make_logits`: nanoGPT's forward(x, y).loss instead of the trainer's loss(x, y).
Phases run_steps(CppSide& s, const BenchTrainFlags& f, int64_t warmup, int64_t steps,
                 bool make_logits = false) {
  // As Trainer::step: the clip's scaling folded into the optimizer's step.
  return bench::time_steps(
      *s.model, *s.opt, [&] { s.opt->zero_grad(); }, [&] { s.opt->clip_grad_norm(s.params, 1.0); },
      s.x, s.y, warmup, steps, dtype_from_flag(f.dtype), make_logits);
}

Phases cpp_step(const GPTConfig& config, const BenchTrainFlags& f, const torch::Device& device,
                bool make_logits = false) {
  CppSide s = cpp_side(config, f, device);
  return run_steps(s, f, f.warmup, f.steps, make_logits);
}

// --profile-steps: the same step again, after its warm-up, under LibTorch's
// profiler; each kernel, then each kind against its floor at `peak` (the
// products' FLOP/s measured in this run) and the copy bandwidth.
void print_kernel_profile(const GPTConfig& config, const BenchTrainFlags& f,
                          const torch::Device& device, double peak, std::ostream& out) {
  CppSide s = cpp_side(config, f, device);
  run_steps(s, f, std::max(f.warmup, 1), 0);
  const auto step = [&] { run_steps(s, f, 0, 1); };
  const KernelProfile profile = profile_kernels(step, f.profile_steps);
  out << kernel_table(profile, 20);
  const double bandwidth = device_copy_bandwidth(device);
  const StepShape shape = StepShape::of(*s.model, f.batch, f.seq, f.dtype == "float32" ? 4 : 2);
  fmt::print(out, "floors    products and attention at the {:.1f} TFLOP/s above; {}\n",
             peak / 1e12,
             bandwidth > 0 ? fmt::format("norms, loss and optimizer at a 1 GiB copy's {:.2f} TB/s",
                                         bandwidth / 1e12)
                           : std::string("no byte floors: the device had no 2 GiB free to time "
                                         "a copy"));
  out << kind_table(profile, step_floors_us(shape, peak, bandwidth));
}

}  // namespace

int run_bench_train(const BenchTrainFlags& f, std::ostream& out) {
  out << std::unitbuf;  // each line as soon as it is known, through a pipe too
  const GPTConfig config = train_preset(f.preset).model;  // the real shapes, wpe included
  const torch::Device device = device_from_flag(f.device);
  const torch::ScalarType dtype = dtype_from_flag(f.dtype);
  const int threads = f.threads > 0 ? f.threads : default_threads();
  set_compute_threads(threads);
  if (f.matmul != "auto") {
    set_matmul_backend(f.matmul == "torch" ? MatmulBackend::kTorch : MatmulBackend::kOneDnn);
  }
  const bool kept = keep_freed_memory();  // as `gpt2 train` runs
  const RuntimeInfo rt = runtime_info();
  const bool gpu = !device.is_cpu();
  if (f.profile_steps > 0 && !gpu) {
    throw ConfigError(fmt::format("--profile-steps {}: LibTorch's profiler times the kernels of a "
                                  "GPU step; give --device cuda", f.profile_steps));
  }
  std::vector<Side> sides = external_sides(config, f, threads, rt);
  // In this process, first after the C++ side.
  const auto in_process = [&](std::string name, std::string about, std::function<Phases()> step) {
    Side side;
    side.name = std::move(name);
    side.about = std::move(about);
    side.python = false;
    side.in_process = true;
    side.step = std::move(step);
    sides.insert(sides.begin(), std::move(side));
  };
  if (f.torch_ops_side) {
    if (!gpu || !cuda_kernels_built()) {
      throw ConfigError(fmt::format("--torch-ops-side: {}", !gpu ? "the library's own CUDA kernels "
                                    "run on a GPU; give --device cuda" : cuda_kernels_line()));
    }
    in_process("C++ torch", "this step with torch's ops where the library has CUDA kernels of "
                            "its own (set_cuda_kernels(false))", [&] {
      set_cuda_kernels(false);
      try {
        const Phases p = cpp_step(config, f, device);
        set_cuda_kernels(true);
        return p;
      } catch (...) {
        set_cuda_kernels(true);
        throw;
      }
    });
  }
  if (f.logits_side) {
    in_process("C++ logits", "this step with nanoGPT's forward(x, y).loss: the (B, T, V) logits "
                             "made, then the loss",
               [&] { return cpp_step(config, f, device, /*make_logits=*/true); });
  }
  fmt::print(out, "bench     {} preset, B {} T {}, AdamW (nanoGPT groups), median of {} steps after "
                  "{} warm-up, {} rounds{}\n", f.preset, f.batch, f.seq, f.steps, f.warmup, f.rounds,
             sides.empty() ? "" : fmt::format("; each run of a side in its own process capped at "
                                              "{} s (--side-timeout)", f.side_timeout));
  fmt::print(out, "C++       as `gpt2 train` runs: {}; {}; the clip's scaling in the optimizer's "
                  "step\n", runtime_line(rt),
             kept ? "freed memory kept in the heap" : "MALLOC_* from the environment");
  if (gpu) at::globalContext().setFloat32MatmulPrecision("high");  // as `gpt2 train` and nanoGPT
  const double blas_peak = gpu ? device_matmul_peak(device, dtype) : matmul_peak(std::nullopt);
  const double dnn_peak = !gpu && onednn_available() ? matmul_peak(MatmulBackend::kOneDnn) : 0;
  const double best_peak = std::max(blas_peak, dnn_peak);
  if (gpu) {
    fmt::print(out, "device    {} (every side runs there)\n",
               device_line(device, dtype, dtype == torch::kFloat ? "throughout" : "autocast", config,
                           f.batch, f.seq));
    fmt::print(out, "peak      {} 8192^2 product on {}: {:.1f} TFLOP/s\n", f.dtype, device.str(),
               blas_peak / 1e12);
  } else {
    fmt::print(out, "peak      float32 2048^2 product: torch::mm (BLAS) {:.1f} GFLOP/s, oneDNN {:.1f} "
                    "GFLOP/s\n", blas_peak / 1e9, dnn_peak / 1e9);
  }
  Samples cpp;
  double first_rss = 0;  // one model's, as a `gpt2 train` process holds one
  for (int r = 0; r < f.rounds; ++r) {  // alternating, so drift hits every side
    const Phases step = cpp_step(config, f, device);  // a failure here ends the bench
    for (const auto& [phase, s] : step) cpp[phase].push_back(s);
    if (r == 0) first_rss = max_rss_bytes();
    out << round_line(r + 1, "C++", fmt::format("{:.1f} ms a step", 1000 * step.at("total")));
    for (Side& side : sides) {
      if (!side.in_process) {
        run_side(side, r + 1, f.side_timeout, out);
        continue;
      }
      if (!side.failure.empty()) continue;
      try {  // the logits may not fit where the fused head's step does
        const Phases other = side.step();
        for (const auto& [phase, s] : other) side.samples[phase].push_back(s);
        out << round_line(r + 1, side.name,
                          fmt::format("{:.1f} ms a step", 1000 * other.at("total")));
      } catch (const std::exception& e) {
        const std::string what = e.what();
        side.failure = fmt::format("in round {}: {}", r + 1, what.substr(0, what.find('\n')));
        out << round_line(r + 1, side.name, "FAILED: " + side.failure + "; not run again");
      }
    }
  }
  const double tokens = static_cast<double>(f.batch * f.seq);
  // nanoGPT's estimate: 6 N per token for the matmuls of forward and
  // backward, plus 12 L T C for attention.
  const double n = static_cast<double>(config.num_parameters(/*non_embedding=*/true));
  const double flops = tokens * (6 * n + 12.0 * config.n_layer() * f.seq * config.n_embd());
  print_phase_table(cpp, sides, out);
  const double total = median(cpp["total"]);
  fmt::print(out, "C++       {:.0f} tokens/s, {:.1f} GFLOP/s = {:.0f}% of the better product peak, "
                  "peak RSS {:.2f} GB after the first round ({:.2f} GB after all {}: each builds "
                  "a model)\n", tokens / total, flops / total / 1e9, 100 * flops / total / best_peak,
             first_rss / 1e9, max_rss_bytes() / 1e9, f.rounds);
  print_side_rates(sides, tokens, total, gpu, out);
  if (f.profile_steps > 0) print_kernel_profile(config, f, device, blas_peak, out);
  return 0;
}

}  // namespace gpt2::app
