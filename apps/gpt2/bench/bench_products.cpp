#include "apps/gpt2/bench/bench_products.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "apps/gpt2/bench/bench_command.h"
#include "apps/gpt2/bench/bench_stats.h"
#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/common/train_presets.h"
#include "gpt2/ops/ops.h"
#include "gpt2/ops/settings.h"
#include "gpt2/runtime/runtime.h"

namespace gpt2::app {
namespace {

using Clock = std::chrono::steady_clock;
// Between the sides: longer than a BLAS's worker threads spin after a call.
constexpr std::chrono::milliseconds kSettle{300};

// One Linear shape of the model and how often a step runs it.
struct Shape {
  const char* name;
  int64_t in, out, per_step;
};


// One shape's operands, made once: each run times the product and its
// backward (dx, dw, db) into dropped gradients, as a training step does.
struct Operands {
  torch::Tensor x, w, b, g;
  Operands(const Shape& s, int64_t rows)
      : x(torch::randn({rows, s.in}).requires_grad_()),
        w(torch::randn({s.out, s.in}).mul_(0.02).requires_grad_()),
        b(torch::zeros({s.out}).requires_grad_()),
        g(torch::randn({rows, s.out})) {}

  double seconds(MatmulBackend backend) {
    set_matmul_backend(backend);
    for (auto* t : {&x, &w, &b}) t->mutable_grad().reset();
    const auto start = Clock::now();
    ops::linear(x, w, b).backward(g);
    return std::chrono::duration<double>(Clock::now() - start).count();
  }
};

}  // namespace

int run_bench_products(const BenchProductsFlags& f, std::ostream& out) {
  if (!onednn_available()) {
    fmt::print(out, "products  this build has no oneDNN: every product is torch's\n");
    return 0;
  }
  const BackendChoice rule = choose_matmul_backend();
  const GPTConfig c = train_preset(f.preset).model;
  const int64_t C = c.n_embd(), L = c.n_layer(), rows = f.batch * f.seq;
  const std::vector<Shape> shapes = {{"attn.c_attn", C, 3 * C, L},
                                     {"attn.c_proj", C, C, L},
                                     {"mlp.c_fc", C, 4 * C, L},
                                     {"mlp.c_proj", 4 * C, C, L},
                                     {"lm_head", C, c.vocab_size(), 1}};
  const RuntimeInfo rt = runtime_info();
  fmt::print(out, "runtime   {}\n", runtime_line(rt));
  fmt::print(out, "products  {} preset, {} rows (B {} x T {}), forward + backward of each Linear, "
                  "median of {} after 1 warm-up; each round runs every shape on oneDNN, then on "
                  "the BLAS, each side after a {} ms pause\n",
             f.preset, rows, f.batch, f.seq, f.repeats, kSettle.count());
  fmt::print(out, "  {:<12} {:>16} {:>10} {:>10} {:>9} {:>9}\n", "layer", "(in, out)",
             "onednn ms", "torch ms", "torch/dnn", "per step");
  // Round-robin over shapes and sides, so that a burst of the machine's
  // noise spreads over all of them instead of one shape's repeats. Each
  // round runs every shape on one side, then on the other: the side that
  // ran last leaves its threads spinning for a while (OpenBLAS's for about
  // 0.1 s), which took cores from oneDNN's when the sides took turns per
  // product (docs/speed.md). So a side's block starts after a pause.
  std::vector<Operands> operands;
  for (const Shape& s : shapes) operands.emplace_back(s, rows);
  std::vector<std::vector<double>> dnn(shapes.size()), blas(shapes.size());
  for (int r = 0; r <= f.repeats; ++r) {
    for (const MatmulBackend side : {MatmulBackend::kOneDnn, MatmulBackend::kTorch}) {
      std::this_thread::sleep_for(kSettle);
      for (size_t i = 0; i < shapes.size(); ++i) {
        const double seconds = operands[i].seconds(side);
        if (r == 0) continue;  // warm-up: oneDNN's JIT, OpenBLAS's threads, first touch
        (side == MatmulBackend::kOneDnn ? dnn : blas)[i].push_back(seconds);
      }
    }
  }
  double step_dnn = 0, step_torch = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    const double d = median(dnn[i]), t = median(blas[i]);
    step_dnn += d * s.per_step;
    step_torch += t * s.per_step;
    fmt::print(out, "  {:<12} {:>16} {:>10.2f} {:>10.2f} {:>9.2f} {:>8}x\n", s.name,
               fmt::format("({}, {})", s.in, s.out), 1000 * d, 1000 * t, t / d, s.per_step);
  }
  reset_matmul_backend();
  const double chosen = rule.backend == MatmulBackend::kOneDnn ? step_dnn : step_torch;
  const double other = rule.backend == MatmulBackend::kOneDnn ? step_torch : step_dnn;
  fmt::print(out, "  {:<12} {:>16} {:>10.1f} {:>10.1f} {:>9.2f}\n", "step", "", 1000 * step_dnn,
             1000 * step_torch, step_torch / step_dnn);
  fmt::print(out, "rule      {} ({}): {}\n", to_string(rule.backend), rule.reason,
             chosen <= other ? fmt::format("the faster here, by {:.0f}%", 100 * (other / chosen - 1))
                             : fmt::format("SLOWER here by {:.0f}%; set_matmul_backend or "
                                           "--matmul picks the other", 100 * (chosen / other - 1)));
  return chosen <= other * 1.05 ? 0 : 1;
}

void add_bench_products_command(CLI::App& bench, int* rc) {
  auto f = std::make_shared<BenchProductsFlags>();
  CLI::App* p = bench.add_subcommand(
      "products", "The model's products on oneDNN and on the BLAS, and which the rule picks");
  add_step_shape_flags(*p, f->preset, f->batch, f->seq);
  p->add_option("--repeats", f->repeats, "Timed runs of each shape on each side")
      ->check(gpt2::app::in_range(1, 100))->capture_default_str();
  p->footer("Exit status 1 when the rule's choice was more than 5% slower over the step's products.");
  p->callback([f, rc] { *rc = run_bench_products(*f, std::cout); });
}

}  // namespace gpt2::app
