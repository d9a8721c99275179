#pragma once
/// nanoGPT's learning-rate schedule: linear warm-up, then cosine decay to
/// min_lr, then min_lr.

#include <torch/arg.h>

#include <cstdint>

namespace gpt2 {

/// The schedule's four numbers.
struct LrSchedule {
  /// Peak rate, reached at the end of warm-up.
  TORCH_ARG(double, lr) = 6e-4;
  /// Floor of the cosine, kept after decay_steps.
  TORCH_ARG(double, min_lr) = 6e-5;
  /// Steps of linear warm-up.
  TORCH_ARG(int64_t, warmup_steps) = 2000;
  /// Step at which the cosine reaches min_lr (nanoGPT's lr_decay_iters).
  TORCH_ARG(int64_t, decay_steps) = 600000;

 public:
  /// The rate for 0-based step `it`, as nanoGPT's get_lr: lr * (it + 1) /
  /// (warmup + 1) during warm-up, then min_lr + (lr - min_lr) * (1 + cos(pi
  /// * r)) / 2 with r the fraction of the decay done, min_lr after it.
  double at(int64_t it) const;
};

}  // namespace gpt2
