// `gpt2 plot`'s curve (apps/gpt2/plot/loss_plot.h): the smoothing against
// its definition, and the values the plot refuses.
#include "apps/gpt2/plot/loss_plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gpt2/error.h"
#include "test_util.h"

namespace gpt2::app {
namespace {

TEST(LossPlot, MovingAverageIsTheCentredMeanOfEachWindow) {
  std::mt19937 gen(3);
  std::normal_distribution<double> noise(3.0, 0.5);
  std::vector<double> y(1000);
  for (auto& v : y) v = noise(gen);
  for (size_t window : {1, 2, 7, 40, 1000, 5000}) {
    const std::vector<double> got = moving_average(y, window);
    ASSERT_EQ(got.size(), y.size());
    const size_t half = window / 2;
    for (size_t i = 0; i < y.size(); i += 37) {
      const size_t lo = i >= half ? i - half : 0, hi = std::min(y.size(), i + half + 1);
      double sum = 0;
      for (size_t j = lo; j < hi; ++j) sum += y[j];
      EXPECT_NEAR(got[i], sum / static_cast<double>(hi - lo), 1e-9) << window << " " << i;
    }
  }
}

TEST(LossPlot, ALossPastWhatThePlotDrawsIsRefusedNamingItsRow) {
  testing::TempDir dir;
  std::vector<LogRow> rows(3);
  for (int i = 0; i < 3; ++i) {
    rows[i].step = i + 1;
    rows[i].split = "train";
    rows[i].loss = 3.0;
  }
  rows[1].loss = 1e308;
  try {
    plot_losses(rows, dir / "loss.svg", "t");
    ADD_FAILURE() << "1e308 drawn";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the log's train row at step 2 holds loss 1e+308"),
              std::string::npos) << e.what();
  }
  EXPECT_EQ(dir.entries(), 0) << "nothing written";
  rows[1].loss = INFINITY;  // a non-finite loss is a step the plot skips
  EXPECT_NO_THROW(plot_losses(rows, dir / "loss.svg", "t"));
}

}  // namespace
}  // namespace gpt2::app
