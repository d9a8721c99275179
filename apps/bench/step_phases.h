#pragma once
// One training step timed by phase, shared by `gpt2 bench train`'s own side
// and by gpt2-app-step (apps/bench/app_step.cpp), so both time the same
// thing: header-only, on LibTorch and the public gpt2 API.

#include <torch/cuda.h>
#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpt2/model/gpt.h"
#include "gpt2/ops/ops.h"

namespace gpt2::bench {

/// Median seconds per phase: zero_grad, forward, backward, clip, optimizer, total.
using Phases = std::map<std::string, double>;

/// Runs `warmup` untimed and `steps` timed steps of `model` on (x, y):
/// `clear` drops the gradients, then forward with the loss (under
/// ops::Autocast(x's device, dtype): model.loss(x, y) as `gpt2 train` runs
/// it, or with `make_logits` nanoGPT's forward(x, y).loss, which makes the
/// (B, T, V) logits first), backward, `clip` (to a norm of 1.0),
/// `opt.step()`. On a GPU each phase ends when the device has done its work.
template <class Optimizer, class Clear, class Clip>
Phases time_steps(GPTImpl& model, Optimizer& opt, Clear clear, Clip clip, const torch::Tensor& x,
                  const torch::Tensor& y, int64_t warmup, int64_t steps,
                  torch::ScalarType dtype = torch::kFloat, bool make_logits = false) {
  using Clock = std::chrono::steady_clock;
  const bool cuda = x.is_cuda();
  const auto since = [cuda](Clock::time_point t) {
    if (cuda) torch::cuda::synchronize();
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  std::map<std::string, std::vector<double>> times;
  for (int64_t step = 0; step < warmup + steps; ++step) {
    const auto t0 = Clock::now();
    clear();
    const double zero = since(t0);
    auto t = Clock::now();
    torch::Tensor loss;
    {
      ops::Autocast autocast(x.device(), dtype);
      loss = make_logits ? model.forward(x, y).loss : model.loss(x, y);
    }
    const double fwd = since(t);
    t = Clock::now();
    loss.backward();
    const double bwd = since(t);
    t = Clock::now();
    clip();
    const double clipped = since(t);
    t = Clock::now();
    opt.step();
    const double optim = since(t);
    if (step < warmup) continue;
    for (const auto& [phase, s] : {std::pair<const char*, double>{"zero_grad", zero},
                                   {"forward", fwd}, {"backward", bwd}, {"clip", clipped},
                                   {"optimizer", optim}, {"total", since(t0)}}) {
      times[phase].push_back(s);
    }
  }
  Phases out;
  for (auto& [phase, v] : times) {
    std::sort(v.begin(), v.end());
    out[phase] = v[v.size() / 2];
  }
  return out;
}

}  // namespace gpt2::bench
