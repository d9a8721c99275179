// Where a token is drawn, on a GPU (SamplingOptions::draw): the device's
// draw there against the same draw of the same logits on the CPU, the
// host's draw against the CPU's stream, and sample_rows's batch against
// each row alone. Each test skips, saying so, without a GPU.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdint>
#include <iostream>
#include <vector>

#include "gpt2/generate/generate.h"
#include "gpu/need_cuda.h"

namespace gpt2 {
namespace {


at::Generator seeded(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

// 256 rows of GPT-2's vocabulary, logits spread as a trained model's.
torch::Tensor rows_of_logits() {
  torch::manual_seed(1);
  return torch::randn({256, 50257}) * 3;
}

const std::vector<SamplingOptions>& settings() {
  static const std::vector<SamplingOptions> all = {
      SamplingOptions(), SamplingOptions().temperature(0.8).top_k(200),
      SamplingOptions().top_p(0.9), SamplingOptions().temperature(0)};
  return all;
}

// The same uniform numbers, the cumulative sums in float64 on either side:
// a row may differ only where its number falls within rounding of a
// boundary, which 256 rows should not meet more than once.
TEST(CudaDraw, TheDevicesDrawOnAGpuIsTheCpusOfTheSameLogits) {
  NEED_CUDA();
  const auto logits = rows_of_logits();
  for (size_t i = 0; i < settings().size(); ++i) {
    const SamplingOptions o = SamplingOptions(settings()[i]).draw(Draw::kDevice);
    at::Generator a = seeded(7), b = seeded(7);
    const auto cpu = sample_next(logits, o, a);
    const auto gpu = sample_next(logits.to(kCuda), o, b);
    EXPECT_TRUE(gpu.is_cuda());
    const int64_t same = (cpu == gpu.cpu()).sum().item<int64_t>();
    std::cout << "setting " << i << ": " << same << " of 256 rows the same token\n";
    EXPECT_GE(same, 255) << "setting " << i;
  }
}

TEST(CudaDraw, AutoDrawsOnTheGpuAndHostIsTheCpusStream) {
  NEED_CUDA();
  const auto logits = rows_of_logits();
  at::Generator a = seeded(8), b = seeded(8), c = seeded(8);
  EXPECT_TRUE(sample_next(logits.to(kCuda), SamplingOptions(), a).is_cuda());
  const auto host = sample_next(logits.to(kCuda), SamplingOptions().draw(Draw::kHost), b);
  EXPECT_TRUE(torch::equal(host.cpu(), sample_next(logits, SamplingOptions(), c)));
}

TEST(CudaDraw, SampleRowsGivesEachRowWhatItGetsAlone) {
  NEED_CUDA();
  const auto logits = rows_of_logits().narrow(0, 0, 8).to(kCuda);
  std::vector<SamplingOptions> options;
  for (int64_t r = 0; r < 8; ++r) {
    options.push_back(settings()[static_cast<size_t>(r) % settings().size()]);
  }
  options[5].draw(Draw::kHost);
  std::vector<at::Generator> batch, alone;
  for (uint64_t r = 0; r < 8; ++r) {
    batch.push_back(seeded(20 + r));
    alone.push_back(seeded(20 + r));
  }
  std::vector<RowSampler> rows;
  for (size_t r = 0; r < 8; ++r) rows.push_back({&options[r], &batch[r]});
  const std::vector<RowDraw> got = sample_rows(logits, rows);
  for (size_t r = 0; r < 8; ++r) {
    EXPECT_EQ(got[r].token, sample_next(logits.narrow(0, static_cast<int64_t>(r), 1), options[r],
                                  alone[r]).item<int64_t>()) << "row " << r;
  }
}

}  // namespace
}  // namespace gpt2
