// Where a token is drawn (SamplingOptions::draw): the device's draw, run
// here on CPU tensors, against the distribution it samples, the host's
// filters, and sample_rows's batch of rows that each have their own
// options and generator.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/generate/generate.h"
#include "test_util.h"

namespace gpt2 {
namespace {

at::Generator seeded(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

SamplingOptions on_device() { return SamplingOptions().draw(Draw::kDevice); }

// The share of each of V tokens among the draws (N).
std::vector<double> shares(const torch::Tensor& ids, int64_t V) {
  std::vector<double> out(static_cast<size_t>(V));
  for (int64_t v = 0; v < V; ++v) {
    out[static_cast<size_t>(v)] = (ids == v).to(torch::kDouble).mean().item<double>();
  }
  return out;
}

TEST(DeviceDraw, SamplesTheSoftmaxOfTheLogits) {
  const std::vector<double> p = {0.4, 0.3, 0.2, 0.07, 0.03};
  auto logits = torch::tensor(p).log().to(torch::kFloat).unsqueeze(0).expand({20000, 5});
  at::Generator g = seeded(11);
  const auto got = shares(sample_next(logits, on_device(), g), 5);
  for (size_t v = 0; v < p.size(); ++v) {
    // Five standard errors of a share of 20000 draws.
    EXPECT_NEAR(got[v], p[v], 5 * std::sqrt(p[v] * (1 - p[v]) / 20000)) << "token " << v;
  }
}

TEST(DeviceDraw, KeepsOnlyTheTokensTheHostsFiltersKeep) {
  // Probabilities 0.5, 0.3, 0.15, 0.05, as the host's test.
  auto logits = torch::tensor({0.5, 0.3, 0.15, 0.05}).log().unsqueeze(0).expand({4000, 4});
  at::Generator g = seeded(2);
  EXPECT_TRUE((sample_next(logits, on_device().top_k(2), g) < 2).all().item<bool>());
  const auto p = sample_next(logits, on_device().top_p(0.7), g);
  EXPECT_TRUE((p < 2).all().item<bool>());
  EXPECT_NEAR((p == 0).to(torch::kDouble).mean().item<double>(), 0.625, 0.04);  // 5:3
  // Temperature 0.5 squares the odds: 0.25 : 0.09 of the two kept.
  const auto t = sample_next(logits, on_device().top_k(2).temperature(0.5), g);
  EXPECT_NEAR((t == 0).to(torch::kDouble).mean().item<double>(), 0.25 / 0.34, 0.04);
  // Greedy draws nothing and is argmax.
  EXPECT_TRUE((sample_next(logits, on_device().temperature(0), g) == 0).all().item<bool>());
}

TEST(DeviceDraw, TheSameSeedGivesTheSameTokens) {
  auto logits = torch::randn({64, 50});
  at::Generator a = seeded(5), b = seeded(5), c = seeded(6);
  const auto first = sample_next(logits, on_device(), a);
  EXPECT_TRUE(torch::equal(first, sample_next(logits, on_device(), b)));
  EXPECT_FALSE(torch::equal(first, sample_next(logits, on_device(), c)));
}

// A uniform number just below 1 must draw the last token that can be
// drawn, not one that top_k removed after it.
TEST(DeviceDraw, ANumberNearOneDrawsTheLastKeptToken) {
  uint64_t seed = 0;
  for (; seed < 200000; ++seed) {
    at::Generator probe = seeded(seed);
    if (torch::rand({1}, probe, torch::kDouble).item<double>() > 0.9999) break;
  }
  ASSERT_LT(seed, 200000u) << "no seed draws a number above 0.9999";
  auto logits = torch::tensor({{1.0f, 1.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f}});
  at::Generator g = seeded(seed);
  EXPECT_EQ(sample_next(logits, on_device().top_k(4), g).item<int64_t>(), 3);
}

// sample_rows: a batch of rows with their own options and generators gives
// each row what sample_next gives it alone, host rows and device rows mixed.
TEST(SampleRows, EachRowAsSampleNextGivesItAlone) {
  torch::manual_seed(3);
  auto logits = torch::randn({6, 40});
  const std::vector<SamplingOptions> options = {
      on_device(), on_device().temperature(0), on_device().top_k(5).temperature(0.7),
      SamplingOptions().draw(Draw::kHost).top_p(0.9), on_device().top_p(0.5),
      SamplingOptions()};  // kAuto on the CPU: the host's
  for (int round = 0; round < 3; ++round) {
    std::vector<at::Generator> batch, alone;
    std::vector<RowSampler> rows;
    for (size_t r = 0; r < options.size(); ++r) {
      batch.push_back(seeded(100 + r + 10 * round));
      alone.push_back(seeded(100 + r + 10 * round));
    }
    for (size_t r = 0; r < options.size(); ++r) rows.push_back({&options[r], &batch[r]});
    const std::vector<RowDraw> got = sample_rows(logits, rows);
    for (size_t r = 0; r < options.size(); ++r) {
      const auto want = sample_next(logits.narrow(0, static_cast<int64_t>(r), 1), options[r],
                                    alone[r]).item<int64_t>();
      EXPECT_EQ(got[r].token, want) << "row " << r << ", round " << round;
      EXPECT_EQ(got[r].error, "");
    }
  }
}

TEST(SampleRows, MisuseIsAnInputError) {
  auto logits = torch::randn({2, 10});
  const SamplingOptions o;
  at::Generator g = seeded(1);
  EXPECT_THROW(sample_rows(logits, {{&o, &g}}), InputError);
  EXPECT_THROW(sample_rows(logits, {{&o, &g}, {nullptr, &g}}), InputError);
  EXPECT_THROW(sample_rows(logits, {{&o, &g}, {&o, nullptr}}), InputError);
  EXPECT_THROW(sample_rows(logits.view({20}), {{&o, &g}}), InputError);
}

// A row whose logits are not finite gets check_logits's message; the
// others their tokens, on either draw.
TEST(SampleRows, ARowOfNonFiniteLogitsGetsItsErrorAlone) {
  auto logits = torch::randn({3, 10});
  logits[1][3] = std::nanf("");
  const SamplingOptions host, device = on_device();
  at::Generator g = seeded(1);
  const auto got = sample_rows(logits, {{&host, &g}, {&device, &g}, {&device, &g}});
  EXPECT_EQ(got[0].error, "");
  EXPECT_GE(got[0].token, 0);
  EXPECT_NE(got[1].error.find("the logits hold NaN or infinity (first at [0, 3])"),
            std::string::npos) << got[1].error;
  EXPECT_EQ(got[1].token, -1);
  EXPECT_EQ(got[2].error, "");
  EXPECT_GE(got[2].token, 0);
}

// The device's draw is queued before the logits are checked; non-finite
// logits still throw, naming where.
TEST(DeviceDraw, NonFiniteLogitsAreAnInputError) {
  auto logits = torch::randn({2, 10});
  logits[1][4] = std::numeric_limits<float>::infinity();
  at::Generator g = seeded(1);
  for (const SamplingOptions& o : {on_device(), on_device().temperature(0), on_device().top_p(0.5)}) {
    try {
      sample_next(logits, o, g);
      ADD_FAILURE() << "no error for an infinite logit";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("first at [1, 4]"), std::string::npos) << e.what();
    }
  }
}

TEST(SampleRows, DrawNames) {
  EXPECT_EQ(enum_name(Draw::kDevice), "device");
  EXPECT_EQ(enum_from_name<Draw>("host", "--draw"), Draw::kHost);
}

// On the CPU, kAuto is the host's stream: the text a seed gave before.
TEST(GenerateDraw, AutoOnTheCpuIsTheHostsStreamAndDeviceIsItsOwn) {
  GPT model(testing::tiny_config().init(InitOptions().seed(4)));
  const std::vector<std::vector<int64_t>> prompts = {{1, 2, 3}, {4}};
  const auto run = [&](Draw d, uint64_t seed) {
    return generate(*model, prompts, SamplingOptions().max_new_tokens(12).seed(seed).draw(d));
  };
  EXPECT_EQ(run(Draw::kAuto, 9), run(Draw::kHost, 9));
  EXPECT_EQ(run(Draw::kDevice, 9), run(Draw::kDevice, 9));
  EXPECT_NE(run(Draw::kDevice, 9), run(Draw::kHost, 9));
}

}  // namespace
}  // namespace gpt2
