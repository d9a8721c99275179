#include "apps/gpt2/bench/product_peaks.h"

#include <torch/cuda.h>

#include <chrono>
#include <vector>

#include "apps/gpt2/bench/bench_stats.h"
#include "gpt2/ops/ops.h"

namespace gpt2::app {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

double device_matmul_peak(const torch::Device& device, torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  const auto options = torch::TensorOptions().device(device).dtype(dtype);
  auto a = torch::randn({8192, 8192}, options), b = torch::randn({8192, 8192}, options);
  std::vector<double> rates;
  for (int i = 0; i < 13; ++i) {
    torch::cuda::synchronize(device.index());
    const auto t = Clock::now();
    auto c = torch::mm(a, b);
    torch::cuda::synchronize(device.index());
    const double s = since(t);
    if (i >= 3) rates.push_back(2.0 * 8192 * 8192 * 8192 / s);
  }
  return median(rates);
}

double device_copy_bandwidth(const torch::Device& device) {
  torch::NoGradGuard no_grad;
  const int64_t bytes = int64_t{1} << 30;
  torch::Tensor from, to;
  try {
    from = torch::empty({bytes}, torch::TensorOptions().device(device).dtype(torch::kUInt8));
    to = torch::empty_like(from);
  } catch (const c10::Error&) {  // the step left too little memory
    return 0;
  }
  from.fill_(1);
  std::vector<double> rates;
  for (int i = 0; i < 7; ++i) {
    torch::cuda::synchronize(device.index());
    const auto t = Clock::now();
    to.copy_(from);
    torch::cuda::synchronize(device.index());
    const double s = since(t);
    if (i >= 2) rates.push_back(2.0 * static_cast<double>(bytes) / s);
  }
  return median(rates);
}

double matmul_peak(std::optional<MatmulBackend> backend) {
  torch::NoGradGuard no_grad;
  const BackendChoice saved = matmul_backend_choice();
  if (backend) set_matmul_backend(*backend);
  auto a = torch::randn({2048, 2048}), b = torch::randn({2048, 2048});
  std::vector<double> rates;
  for (int i = 0; i < 6; ++i) {
    const auto t = Clock::now();
    auto c = backend ? ops::linear(a, b, {}) : torch::mm(a, b);
    const double s = since(t);
    if (i > 0) rates.push_back(2.0 * 2048 * 2048 * 2048 / s);
  }
  if (saved.forced) set_matmul_backend(saved.backend);
  else reset_matmul_backend();
  return median(rates);
}

}  // namespace gpt2::app
