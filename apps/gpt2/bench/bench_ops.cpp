#include "apps/gpt2/bench/bench_ops.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <vector>

#include "apps/gpt2/bench/bench_command.h"
#include "apps/gpt2/bench/bench_stats.h"
#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/common/train_presets.h"
#include "gpt2/model/gpt.h"
#include "gpt2/ops/ops.h"
#include "gpt2/ops/torch_compat.h"
#include "gpt2/runtime/runtime.h"
#include "gpt2/train/optim.h"

namespace gpt2::app {
namespace {

using torch::Tensor;
// Calls per sample: back to back, as a step runs its ops, so that the
// kernel threads are awake as they are in a step.
constexpr int kCalls = 5;

// One op both ways. Each side runs the op forward and backward (or one
// optimizer step) on operands of its own, made once.
struct Row {
  std::string name, shape, theirs_name;
  std::function<void()> ours, theirs;
};

// Gradients dropped before each run, as a training step's zero_grad does.
void drop_grads(const std::vector<Tensor>& leaves) {
  for (const Tensor& t : leaves) t.mutable_grad().reset();
}

// The heads q, k, v (B, nh, T, hs) of one (B, T, 3C) c_attn output, split
// as nanoGPT splits it.
std::vector<Tensor> heads(const Tensor& qkv, int64_t nh) {
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3;
  std::vector<Tensor> out;
  for (const Tensor& part : qkv.split(C, 2)) out.push_back(part.view({B, T, nh, C / nh}).transpose(1, 2));
  return out;
}

// nanoGPT's explicit attention, torch's only way on 1.13.
Tensor explicit_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  auto att = torch::matmul(q, k.transpose(-2, -1)).mul(1.0 / std::sqrt(double(q.size(-1))));
  att = torch::softmax(att.masked_fill(mask, -std::numeric_limits<double>::infinity()), -1);
  return torch::matmul(att, v);
}

Row attention_row(int64_t B, int64_t T, int64_t C, int64_t nh) {
  const Tensor a = torch::randn({B, T, 3 * C}).requires_grad_();
  const Tensor b = a.detach().clone().requires_grad_();
  const Tensor g = torch::randn({B, nh, T, C / nh});
  const Tensor mask = torch::ones({T, T}, torch::kBool).triu(1);
  Row row{"attention", fmt::format("B {} nh {} T {} hs {}", B, nh, T, C / nh),
          compat::has_sdpa() ? "scaled_dot_product_attention" : "matmul, softmax, matmul", {}, {}};
  row.ours = [=] {
    drop_grads({a});
    const auto h = heads(a, nh);
    ops::attention(h[0], h[1], h[2], mask, 0.0).backward(g);
  };
  row.theirs = [=] {
    drop_grads({b});
    const auto h = heads(b, nh);
    const Tensor y = compat::has_sdpa() ? compat::causal_sdpa(h[0], h[1], h[2])
                                        : explicit_attention(h[0], h[1], h[2], mask);
    y.backward(g);
  };
  return row;
}

Row cross_entropy_row(int64_t rows, int64_t V) {
  const Tensor a = torch::randn({rows, V}).requires_grad_();
  const Tensor b = a.detach().clone().requires_grad_();
  const Tensor targets = torch::randint(V, {rows}, torch::kLong);
  namespace F = torch::nn::functional;
  Row row{"cross_entropy", fmt::format("({}, {})", rows, V), "cross_entropy", {}, {}};
  row.ours = [=] {
    drop_grads({a});
    ops::cross_entropy(a, targets).backward();
  };
  row.theirs = [=] {
    drop_grads({b});
    F::cross_entropy(b, targets, F::CrossEntropyFuncOptions().ignore_index(-1)).backward();
  };
  return row;
}

// The embedding of a tied matrix: its dense gradient from the head comes
// first (here an elementwise product standing in for the head's product),
// then the rows the embedding adds.
Row tied_embedding_row(int64_t B, int64_t T, int64_t V, int64_t C) {
  const Tensor wa = (torch::randn({V, C}) * 0.02).requires_grad_();
  const Tensor wb = wa.detach().clone().requires_grad_();
  const Tensor idx = torch::randint(V, {B, T}, torch::kLong);
  const Tensor g = torch::randn({B, T, C});
  const Tensor head = torch::randn({V, C});
  Row row{"tied_embedding", fmt::format("({}, {}) of ({}, {})", B, T, V, C),
          "embedding", {}, {}};
  row.ours = [=] {
    drop_grads({wa});
    const Tensor x = ops::tied_embedding(idx, wa);
    ((x * g).sum() + (wa * head).sum()).backward();
  };
  row.theirs = [=] {
    drop_grads({wb});
    const Tensor x = torch::embedding(wb, idx);
    ((x * g).sum() + (wb * head).sum()).backward();
  };
  return row;
}

Row gelu_row(int64_t rows, int64_t width) {
  const Tensor a = torch::randn({rows, width}).requires_grad_();
  const Tensor b = a.detach().clone().requires_grad_();
  const Tensor g = torch::randn({rows, width});
  Row row{"gelu (tanh)", fmt::format("({}, {})", rows, width), "gelu", {}, {}};
  row.ours = [=] {
    drop_grads({a});
    ops::gelu(a, "tanh").backward(g);
  };
  row.theirs = [=] {
    drop_grads({b});
    torch::gelu(b, "tanh").backward(g);
  };
  return row;
}

Row layer_norm_row(int64_t rows, int64_t C) {
  std::vector<Tensor> ours{torch::randn({rows, C}), torch::ones({C}), torch::zeros({C})};
  std::vector<Tensor> theirs;
  for (Tensor& t : ours) {
    t.requires_grad_();
    theirs.push_back(t.detach().clone().requires_grad_());
  }
  const Tensor g = torch::randn({rows, C});
  Row row{"layer_norm", fmt::format("({}, {})", rows, C), "layer_norm", {}, {}};
  row.ours = [=] {
    drop_grads(ours);
    ops::layer_norm(ours[0], ours[1], ours[2], 1e-5).backward(g);
  };
  row.theirs = [=] {
    drop_grads(theirs);
    torch::layer_norm(theirs[0], {theirs[0].size(-1)}, theirs[1], theirs[2], 1e-5).backward(g);
  };
  return row;
}

// A copy of every parameter of `model` (the tied matrix once), with a
// random gradient.
std::vector<Tensor> parameters_with_grads(const GPT& model) {
  std::vector<Tensor> out;
  std::vector<const void*> seen;
  for (const Tensor& p : model->parameters()) {
    if (std::find(seen.begin(), seen.end(), p.data_ptr()) != seen.end()) continue;
    seen.push_back(p.data_ptr());
    Tensor t = p.detach().clone().requires_grad_();
    t.mutable_grad() = torch::randn_like(t) * 1e-3;
    out.push_back(t);
  }
  return out;
}

// One AdamW step over every parameter of `model` (nanoGPT's betas and
// weight decay): the library's FusedAdamW against torch::optim::AdamW on
// 1.13, where FusedAdamW runs the library's pass; on 2.4 and later, where
// it runs torch's fused CPU kernel, against that kernel called directly
// (what FusedAdamW's state keeping and kernel threads add or save).
Row adamw_row(const GPT& model) {
  const auto options = torch::optim::AdamWOptions(6e-4).betas({0.9, 0.95}).weight_decay(0.1);
  auto ours = std::make_shared<FusedAdamW>(parameters_with_grads(model), options);
  const std::vector<Tensor> params = parameters_with_grads(model);
  int64_t numel = 0;
  for (const Tensor& p : params) numel += p.numel();
  Row row{"adamw", fmt::format("{:.1f}M parameters", numel / 1e6),
          compat::has_fused_adamw() ? "_fused_adamw_" : "optim::AdamW", {}, {}};
  row.ours = [ours] { ours->step(); };
  if (compat::has_fused_adamw()) {
    struct State {
      std::vector<Tensor> params, grads, m, v, steps;
    };
    auto s = std::make_shared<State>();
    for (const Tensor& p : params) {
      s->params.push_back(p.detach());
      s->grads.push_back(p.grad());
      s->m.push_back(torch::zeros_like(p));
      s->v.push_back(torch::zeros_like(p));
      s->steps.push_back(torch::zeros({}, torch::kFloat));
    }
    row.theirs = [s] {
      compat::fused_adamw(s->params, s->grads, s->m, s->v, s->steps, 6e-4, 0.9, 0.95, 0.1, 1e-8);
    };
  } else {
    auto theirs = std::make_shared<torch::optim::AdamW>(params, options);
    row.theirs = [theirs] { theirs->step(); };
  }
  return row;
}

// Milliseconds per call of `f`, over kCalls calls.
double run_ms(const std::function<void()>& f) {
  ops::ThreadScope scope;  // as a model's forward runs its ops
  return 1000 * time_s([&] {
    for (int i = 0; i < kCalls; ++i) f();
  }) / kCalls;
}

}  // namespace

int run_bench_ops(const BenchOpsFlags& f, std::ostream& out) {
  const GPTConfig c = train_preset(f.preset).model;
  const int64_t B = f.batch, T = f.seq, C = c.n_embd(), V = c.vocab_size(), rows = B * T;
  fmt::print(out, "runtime   {}\n", runtime_line(runtime_info()));
  fmt::print(out, "ops       {} preset, B {} T {}: forward + backward of each op (AdamW: one "
                  "step), ms per call over {} calls, median (range) of {} such runs after 1 "
                  "warm-up; the sides take turns\n",
             f.preset, B, T, kCalls, f.repeats);
  std::vector<Row> table;
  table.push_back(attention_row(B, T, C, c.n_head()));
  table.push_back(cross_entropy_row(rows, V));
  table.push_back(tied_embedding_row(B, T, V, C));
  table.push_back(gelu_row(rows, 4 * C));
  table.push_back(layer_norm_row(rows, C));
  {
    torch::NoGradGuard no_grad;
    table.push_back(adamw_row(GPT(c)));
  }
  fmt::print(out, "  {:<15} {:<26} {:>18} {:>18} {:>10}  torch's op\n", "op", "shape", "gpt2 ms",
             "torch ms", "torch/gpt2");
  for (const Row& r : table) {
    std::vector<double> ours, theirs;
    for (int i = 0; i <= f.repeats; ++i) {
      const double a = run_ms(r.ours);
      const double b = run_ms(r.theirs);
      if (i == 0) continue;  // warm-up: first touch, oneDNN's JIT, the pool
      ours.push_back(a);
      theirs.push_back(b);
    }
    const Stats o = stats(ours), t = stats(theirs);
    fmt::print(out, "  {:<15} {:<26} {:>18} {:>18} {:>10.2f}  {}\n", r.name, r.shape,
               fmt::format("{:.2f} ({:.2f}-{:.2f})", o.median, o.min, o.max),
               fmt::format("{:.2f} ({:.2f}-{:.2f})", t.median, t.min, t.max), t.median / o.median,
               r.theirs_name);
  }
  return 0;
}

void add_bench_ops_command(CLI::App& bench, int* rc) {
  auto f = std::make_shared<BenchOpsFlags>();
  CLI::App* p = bench.add_subcommand(
      "ops", "The library's own CPU kernels against torch's ops, forward and backward");
  add_step_shape_flags(*p, f->preset, f->batch, f->seq);
  p->add_option("--repeats", f->repeats, "Timed runs of each op on each side")
      ->check(gpt2::app::in_range(1, 100))->capture_default_str();
  p->callback([f, rc] { *rc = run_bench_ops(*f, std::cout); });
}

}  // namespace gpt2::app
