#pragma once
// What every `gpt2 bench` side reports: wall seconds of a call, and the
// median with the range of a set of samples.

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace gpt2::app {

/// Wall seconds `f()` takes (steady clock).
template <class F>
double time_s(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  std::forward<F>(f)();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The median (upper median of an even count) and the range of samples.
struct Stats {
  double median, min, max;
};

/// Stats of `v`, which must not be empty.
inline Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

/// stats(v).median.
inline double median(std::vector<double> v) { return stats(std::move(v)).median; }

}  // namespace gpt2::app
