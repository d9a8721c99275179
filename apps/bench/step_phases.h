#pragma once
// One training step timed by phase, shared by `gpt2 bench train`'s own side
// and by gpt2-app-step (apps/bench/app_step.cpp), so both time the same
// thing: header-only, on LibTorch and the public gpt2 API.

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpt2/model/gpt.h"
#include "gpt2/ops/ops.h"

// c10::Event::elapsedTime, which times a device's events (2.6 has it).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
#define GPT2_BENCH_DEVICE_EVENTS 1
#else
#define GPT2_BENCH_DEVICE_EVENTS 0
#endif

namespace gpt2::bench {

/// Phase boundaries of one step. On a GPU each is an event on the device's
/// stream, read once the step is done: the device's time from one to the
/// next, with no wait on the host inside the step (as a training loop runs
/// it, which reads the device once a step). Where LibTorch's events cannot
/// time (before 2.6), each boundary waits for the device instead. On the
/// CPU the host's clock.
class PhaseMarks {
 public:
  explicit PhaseMarks(const torch::Device& device) : device_(device) {}

  /// The next boundary.
  void mark() {
#if GPT2_BENCH_DEVICE_EVENTS
    if (device_.is_cuda()) {
      const c10::impl::VirtualGuardImpl guard(device_.type());
      events_.emplace_back(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
      events_.back().record(guard.getStream(device_));
      return;
    }
#endif
    if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
    host_.push_back(std::chrono::steady_clock::now());
  }

  /// Seconds between consecutive boundaries; waits for the device first.
  std::vector<double> intervals() const {
    std::vector<double> out;
#if GPT2_BENCH_DEVICE_EVENTS
    if (!events_.empty()) {
      events_.back().synchronize();
      for (size_t i = 1; i < events_.size(); ++i) {
        out.push_back(events_[i - 1].elapsedTime(events_[i]) / 1000);  // ms
      }
      return out;
    }
#endif
    for (size_t i = 1; i < host_.size(); ++i) {
      out.push_back(std::chrono::duration<double>(host_[i] - host_[i - 1]).count());
    }
    return out;
  }

 private:
  torch::Device device_;
  std::vector<std::chrono::steady_clock::time_point> host_;
#if GPT2_BENCH_DEVICE_EVENTS
  std::vector<c10::Event> events_;
#endif
};

/// Median seconds per phase: zero_grad, forward, backward, clip, optimizer,
/// and total, the step's time on the host clock from its start until the
/// device has done its work (PhaseMarks times the phases).
using Phases = std::map<std::string, double>;

/// Runs `warmup` untimed and `steps` timed steps of `model` on (x, y):
/// `clear` drops the gradients, then forward with the loss (under
/// ops::Autocast(x's device, dtype): model.loss(x, y) as `gpt2 train` runs
/// it, or with `make_logits` nanoGPT's forward(x, y).loss, which makes the
/// (B, T, V) logits first), backward, `clip` (to a norm of 1.0),
/// `opt.step()`.
template <class Optimizer, class Clear, class Clip>
Phases time_steps(GPTImpl& model, Optimizer& opt, Clear clear, Clip clip, const torch::Tensor& x,
                  const torch::Tensor& y, int64_t warmup, int64_t steps,
                  torch::ScalarType dtype = torch::kFloat, bool make_logits = false) {
  using Clock = std::chrono::steady_clock;
  static const char* const kPhases[] = {"zero_grad", "forward", "backward", "clip", "optimizer"};
  std::map<std::string, std::vector<double>> times;
  for (int64_t step = 0; step < warmup + steps; ++step) {
    const auto start = Clock::now();
    PhaseMarks marks(x.device());
    marks.mark();
    clear();
    marks.mark();
    torch::Tensor loss;
    {
      ops::Autocast autocast(x.device(), dtype);
      loss = make_logits ? model.forward(x, y).loss : model.loss(x, y);
    }
    marks.mark();
    loss.backward();
    marks.mark();
    clip();
    marks.mark();
    opt.step();
    marks.mark();
    const std::vector<double> phases = marks.intervals();  // the device is done
    const double total = std::chrono::duration<double>(Clock::now() - start).count();
    if (step < warmup) continue;
    for (size_t i = 0; i < phases.size(); ++i) times[kPhases[i]].push_back(phases[i]);
    times["total"].push_back(total);
  }
  Phases out;
  for (auto& [phase, v] : times) {
    std::sort(v.begin(), v.end());
    out[phase] = v[v.size() / 2];
  }
  return out;
}

}  // namespace gpt2::bench
