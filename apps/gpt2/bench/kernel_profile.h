#pragma once
// The kernels of a GPU training step, by LibTorch's own profiler (Kineto):
// `gpt2 bench train --profile-steps N` prints where the device's time goes.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gpt2::app {

/// One kernel name's share of a step.
struct KernelTime {
  std::string name;
  double us_per_step = 0;     ///< device time, summed over its launches
  double calls_per_step = 0;  ///< launches
};

/// What ran on the device during the profiled steps, per step.
struct KernelProfile {
  int steps = 0;
  double device_us_per_step = 0;  ///< every kernel, copy and fill summed
  double calls_per_step = 0;
  std::vector<KernelTime> kernels;  ///< largest first
};

/// Runs `step` `steps` times (>= 1) under the profiler, with CPU and CUDA
/// activity, and sums the device-side events (kernels, copies, fills) by
/// name. Throws gpt2::Error when the profiler does not start or records no
/// device event (the step ran on no GPU, or LibTorch has no Kineto).
KernelProfile profile_kernels(const std::function<void()>& step, int steps);

/// The `top` largest as lines of "kernel" rows: microseconds a step, share
/// of the device time, launches a step and the name (cut to 100
/// characters), then one row for the rest.
std::string kernel_table(const KernelProfile& profile, size_t top);

}  // namespace gpt2::app
