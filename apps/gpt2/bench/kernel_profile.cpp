#include "apps/gpt2/bench/kernel_profile.h"

#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "gpt2/error.h"

namespace gpt2::app {
namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

// LibTorch 1.13's events give microseconds, 2.x's nanoseconds.
template <class Event>
auto duration_us(const Event& e, int) -> decltype(e.durationNs(), double()) {
  return static_cast<double>(e.durationNs()) / 1e3;
}
template <class Event>
double duration_us(const Event& e, long) {
  return static_cast<double>(e.durationUs());
}

}  // namespace

KernelProfile profile_kernels(const std::function<void()>& step, int steps) {
  if (steps < 1) throw Error(fmt::format("profile_kernels: steps must be at least 1, got {}", steps));
  const ProfilerConfig config(ProfilerState::KINETO);
  const std::set<ActivityType> activities{ActivityType::CPU, ActivityType::CUDA};
  try {
    profiler::prepareProfiler(config, activities);
    profiler::enableProfiler(config, activities);
  } catch (const c10::Error& e) {
    throw Error(fmt::format("LibTorch's profiler (Kineto) did not start: {}",
                            e.what_without_backtrace()));
  }
  try {
    for (int i = 0; i < steps; ++i) step();
  } catch (...) {
    profiler::disableProfiler();
    throw;
  }
  const auto result = profiler::disableProfiler();
  std::map<std::string, std::pair<double, int64_t>> by_name;  // us, launches
  for (const auto& e : result->events()) {
    if (e.deviceType() != c10::DeviceType::CUDA) continue;
    auto& [us, calls] = by_name[e.name()];
    us += duration_us(e, 0);
    ++calls;
  }
  if (by_name.empty()) {
    throw Error(fmt::format("the profiler saw no device event in {} steps: the step ran on no "
                            "GPU, or this LibTorch was built without Kineto", steps));
  }
  KernelProfile out;
  out.steps = steps;
  for (const auto& [name, t] : by_name) {
    out.kernels.push_back({name, t.first / steps, static_cast<double>(t.second) / steps});
    out.device_us_per_step += t.first / steps;
    out.calls_per_step += static_cast<double>(t.second) / steps;
  }
  std::sort(out.kernels.begin(), out.kernels.end(),
            [](const KernelTime& a, const KernelTime& b) { return a.us_per_step > b.us_per_step; });
  return out;
}

std::string kernel_table(const KernelProfile& profile, size_t top) {
  std::string out = fmt::format(
      "kernels   device time {:.2f} ms a step in {:.0f} launches (LibTorch's profiler, {} steps); "
      "the largest:\n", profile.device_us_per_step / 1e3, profile.calls_per_step, profile.steps);
  const double total = std::max(profile.device_us_per_step, 1e-9);
  double rest_us = 0, rest_calls = 0;
  for (size_t i = 0; i < profile.kernels.size(); ++i) {
    const KernelTime& k = profile.kernels[i];
    if (i >= top) {
      rest_us += k.us_per_step;
      rest_calls += k.calls_per_step;
      continue;
    }
    const std::string name = k.name.size() > 100 ? k.name.substr(0, 97) + "..." : k.name;
    out += fmt::format("kernel    {:9.1f} us {:5.1f}% {:6.1f}x  {}\n", k.us_per_step,
                       100 * k.us_per_step / total, k.calls_per_step, name);
  }
  if (rest_calls > 0) {
    out += fmt::format("kernel    {:9.1f} us {:5.1f}% {:6.1f}x  ({} other names)\n", rest_us,
                       100 * rest_us / total, rest_calls, profile.kernels.size() - top);
  }
  return out;
}

}  // namespace gpt2::app
