// gpt2-app-step: one GPT-2 training step timed the way an app that links
// the library runs it with default settings: the public API (gpt2/gpt2.h)
// and nothing set, no threads, no allocator policy, no backend; or, with
// `configure` last, after the one call that sets the process up,
// gpt2::configure_runtime(). `gpt2 bench train` runs both beside its own
// configuration and the Python peer.
//
// Usage: gpt2-app-step N_LAYER N_HEAD N_EMBD VOCAB BLOCK B T STEPS WARMUP
//                      [configure] [device=cuda] [dtype=bfloat16]
// Prints one line of JSON: median seconds per phase, peak RSS in bytes and
// the runtime as the app found it. On a GPU the app moves the model there
// and autocasts the forward as nanoGPT does; nothing else changes.
#include "gpt2/gpt2.h"
#include "apps/bench/step_phases.h"

#include <torch/nn/utils/clip_grad.h>

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  bool configure = false, bad = argc < 10;
  std::string device = "cpu", dtype = "float32";
  for (int i = 10; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "configure") configure = true;
    else if (arg.rfind("device=", 0) == 0) device = arg.substr(7);
    else if (arg.rfind("dtype=", 0) == 0) dtype = arg.substr(6);
    else bad = true;
  }
  if (bad || (dtype != "float32" && dtype != "bfloat16")) {
    std::fprintf(stderr, "usage: %s N_LAYER N_HEAD N_EMBD VOCAB BLOCK B T STEPS WARMUP [configure] "
                 "[device=cpu|cuda[:N]] [dtype=float32|bfloat16]\n", argv[0]);
    return 2;
  }
  std::vector<int64_t> a;
  for (int i = 1; i < 10; ++i) a.push_back(std::atoll(argv[i]));
  const int64_t B = a[5], T = a[6], steps = a[7], warmup = a[8];
  try {
    if (configure) gpt2::configure_runtime();
    gpt2::GPT model(gpt2::GPTConfig().n_layer(a[0]).n_head(a[1]).n_embd(a[2]).vocab_size(a[3])
                        .block_size(a[4]).init(gpt2::InitOptions().seed(0)));
    const torch::Device dev(device);
    model->to(dev);
    model->train();
    auto opt = gpt2::configure_optimizers(
        *model, torch::optim::AdamWOptions(6e-4).betas({0.9, 0.95}).weight_decay(0.1));
    torch::manual_seed(0);
    auto x = torch::randint(a[3], {B, T}).to(dev), y = torch::randint(a[3], {B, T}).to(dev);
    // As an app writes it, nanoGPT's loop: the optimizer's own zero_grad(),
    // torch's clip_grad_norm_.
    const auto params = model->unique_parameters();
    const auto times = gpt2::bench::time_steps(
        *model, *opt, [&] { opt->zero_grad(); },
        [&] { torch::nn::utils::clip_grad_norm_(params, 1.0); }, x, y, warmup, steps,
        dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat);
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    const gpt2::RuntimeInfo rt = gpt2::runtime_info();
    std::string json = "{";
    for (const auto& [phase, s] : times) json += "\"" + phase + "\": " + std::to_string(s) + ", ";
    json += "\"peak_rss\": " + std::to_string(usage.ru_maxrss * 1024.0) + ", \"blas_core\": \"" +
            rt.blas_core + "\", \"runtime\": \"" + gpt2::runtime_line(rt) + "\", \"device\": \"" +
            x.device().str() + "\"}";
    std::puts(json.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt2-app-step: %s\n", e.what());
    return 1;
  }
  return 0;
}
