#include "apps/gpt2/init_study/sweep.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "test_util.h"

namespace gpt2::app {
namespace {

double final_std(int64_t depth, ResidualScale scheme) {
  const GPTConfig config = GPTConfig().n_layer(depth).n_embd(256).n_head(4).vocab_size(256)
                               .block_size(32).init(InitOptions().seed(3).residual(scheme));
  return profile_at_init(config, 8, 32, 4).residual_std.back();
}

// The shapes the sweep shows, pinned at n_embd 256 with 4 and 16 blocks and a
// small vocabulary (fast): with
// N = 2L the stream's std does not grow with depth; N = L is sqrt(2) above
// it; unscaled it grows like sqrt(depth) (x2 from 4 to 16 blocks). The
// bounds leave room for the sampling noise of one model per point.
TEST(InitStudy, ResidualStdIsFlatWithDepthOnlyUnderTheScaledSchemes) {
  const double two_4 = final_std(4, ResidualScale::kTwoPerBlock);
  const double two_16 = final_std(16, ResidualScale::kTwoPerBlock);
  const double one_16 = final_std(16, ResidualScale::kOnePerBlock);
  const double none_4 = final_std(4, ResidualScale::kNone);
  const double none_16 = final_std(16, ResidualScale::kNone);
  EXPECT_NEAR(two_16 / two_4, 1.0, 0.15);
  EXPECT_NEAR(one_16 / two_16, std::sqrt(2.0), 0.15);
  EXPECT_NEAR(none_16 / none_4, 2.0, 0.3);
}

TEST(InitStudy, SweepPrintsEveryDepthAndSchemeAndWritesTheCsv) {
  testing::TempDir dir;
  SweepFlags f;
  f.depths = {2, 3};
  f.n_embd = 32;
  f.vocab_size = 96;
  f.batch = 2;
  f.seq = 8;
  f.out = dir / "out";
  std::ostringstream out;
  const auto profiles = run_sweep(f, out);
  ASSERT_EQ(profiles.size(), 6u);
  EXPECT_EQ(profiles[5].n_layer, 3);
  EXPECT_EQ(profiles[5].scheme, ResidualScale::kNone);
  std::ifstream csv(dir / "out/init_sweep.csv");
  std::string line;
  int rows = 0;
  std::getline(csv, line);
  EXPECT_EQ(line, "scheme,depth,block,residual_std,grad_norm");
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 3 * (2 + 3));
  EXPECT_NE(out.str().find("none"), std::string::npos);
}

}  // namespace
}  // namespace gpt2::app
