// `gpt2 init-study frontier`'s GPU side, on the CPU: the gpt2-gpu profile's
// grid and recorded settings, the profile run on a tiny model (its CSV and
// grid file), and --clip: parsed, recorded, a resume with another refused.
// Built with or without PLplot: it looks at no picture.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/gpt2/init_study/frontier.h"
#include "apps/gpt2/init_study/frontier_csv.h"
#include "app/frontier_grids.h"
#include "gpt2/error.h"
#include "gpt2/file/read_file.h"
#include "test_util.h"

namespace gpt2::app {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

// The profile the GPU run uses: GPT-2's width and heads at 12, 24 and 48
// blocks, four schemes, two seeds, half-decade rates from 3e-4 to 0.3 (the
// CPU grid's top, 0.1, and one step past it), on cuda in bfloat16 without
// clipping; the grid file records each of those.
TEST(FrontierGpuProfile, IsGpt2sWidthAndDepthsOnCudaInBfloat16WithoutClipping) {
  const FrontierGrid g = frontier_profile("gpt2-gpu");
  EXPECT_EQ(g.depths, (std::vector<int64_t>{12, 24, 48}));
  EXPECT_EQ(g.n_embd, 768);
  EXPECT_EQ(g.n_head, 12);
  EXPECT_EQ(g.schemes.size(), 4u);
  EXPECT_GE(g.seeds.size(), 2u);
  ASSERT_GE(g.lrs.size(), 2u);
  EXPECT_DOUBLE_EQ(g.lrs.front(), 3e-4);
  EXPECT_GE(g.lrs.back(), 0.3);
  for (size_t i = 1; i < g.lrs.size(); ++i) {  // half decades: 3 or 10/3 apart
    EXPECT_NEAR(g.lrs[i] / g.lrs[i - 1], std::sqrt(10.0), 0.2) << g.lrs[i];
  }
  EXPECT_EQ(g.clip, 0);
  EXPECT_EQ(g.device, "cuda");
  EXPECT_EQ(g.dtype, "bfloat16");
  EXPECT_EQ(frontier_cells(g).size(), 4u * 3u * g.lrs.size() * g.seeds.size());
  validate(g);  // its names are checked; the GPU is looked for when runs start

  const std::string settings = frontier_settings(g, 65);
  for (const char* line : {"model.n_embd 768", "model.n_head 12", "model.block_size 256",
                           "train.grad_clip 0", "train.max_steps 120", "device cuda",
                           "dtype bfloat16", "data shipped corpus, char-level"}) {
    EXPECT_TRUE(has_line(settings, line)) << line << " in\n" << settings;
  }
  FrontierGrid second_gpu = g;
  second_gpu.device = "cuda:1";  // the same kind: a piece of the same grid
  EXPECT_EQ(frontier_settings(second_gpu, 65), settings);
}

// The CPU profile's settings are still those its checked-in results record,
// line for line: no device or dtype line, clip 1.
TEST(FrontierGpuProfile, TheFullProfileRecordsWhatItsCheckedInGridFileHolds) {
  EXPECT_EQ(frontier_settings(frontier_profile("full"), 65),
            read_file(GPT2_FRONTIER_GRID, "checked-in grid"));
}

// The profile as a CPU runs it with a tiny model: its rows have the
// columns of every grid, its grid file says bfloat16 and clip 0 (and no
// device: the CPU's), and the bfloat16 autocast trains (finite, lower).
TEST(FrontierGpuProfile, ATinyOverrideRunsOnTheCpuAndRecordsItsSettings) {
  testing::TempDir dir;
  FrontierGrid g = testing::one_cell(dir / "out", "gpt2-gpu");
  g.device = "cpu";
  g.schemes = {ResidualScale::kTwoPerBlock, ResidualScale::kZero};
  std::ostringstream out;
  const std::vector<FrontierRun> runs = run_frontier(g, out);
  ASSERT_EQ(runs.size(), 2u) << out.str();
  EXPECT_NE(out.str().find("device    cpu, bfloat16 autocast"), std::string::npos) << out.str();
  std::ifstream csv(dir / "out/frontier.csv");
  std::string header, row;
  std::getline(csv, header);
  EXPECT_EQ(header,
            "scheme,depth,lr,seed,steps,start_val,final_val,best_val,diverged,skipped,first_skip,"
            "max_grad_norm,rms_start,rms_end,max_attn_logit,seconds");
  std::getline(csv, row);
  EXPECT_EQ(row.rfind("2n,2,0.01,1,4,", 0), 0u) << row;
  for (const FrontierRun& r : runs) {
    EXPECT_TRUE(std::isfinite(r.final_val) && r.final_val < r.start_val) << frontier_row(r);
    EXPECT_TRUE(std::isfinite(r.max_attn_logit) && r.max_grad_norm > 0) << frontier_row(r);
  }
  const std::string grid = read_file(dir / "out/frontier_grid.txt", "grid");
  EXPECT_TRUE(has_line(grid, "train.grad_clip 0")) << grid;
  EXPECT_TRUE(has_line(grid, "dtype bfloat16")) << grid;
  EXPECT_EQ(grid.find("device"), std::string::npos) << grid;
  EXPECT_TRUE(std::filesystem::exists(dir / "out/frontier_table.txt"));
}

TEST(FrontierClip, FlagIsANormOrOff) {
  EXPECT_EQ(clip_from_flag("off"), 0);
  EXPECT_EQ(clip_from_flag("0"), 0);
  EXPECT_EQ(clip_from_flag("2.5"), 2.5);
  for (const std::string bad : {"abc", "", "1.0x", "OFF"}) {
    EXPECT_EQ(testing::error_of<ConfigError>([&] { clip_from_flag(bad); }),
              "--clip: '" + bad + "' is not a gradient norm or off");
  }
  for (const std::string bad : {"-1", "inf", "nan"}) {
    EXPECT_EQ(testing::error_of<ConfigError>([&] { clip_from_flag(bad); }),
              "--clip must be off, 0 or a positive, finite gradient norm, got " + bad);
  }
}

FrontierGrid one_cell(const std::string& out, double clip) {
  FrontierGrid g = testing::one_cell(out);
  g.clip = clip;
  return g;
}

// --clip off is recorded as train.grad_clip 0; continuing that folder with
// another clip (or another dtype) is refused, naming the file and both
// values, and runs nothing.
TEST(FrontierClip, OffIsRecordedAndAnotherClipIsRefusedNamingBothAndTheFile) {
  testing::TempDir dir;
  std::ostringstream out;
  run_frontier(one_cell(dir / "out", 0), out);
  const std::string grid_file = dir / "out/frontier_grid.txt";
  EXPECT_TRUE(has_line(read_file(grid_file, "grid"), "train.grad_clip 0"));
  const std::string csv = read_file(dir / "out/frontier.csv", "csv");
  FrontierGrid clipped = one_cell(dir / "out", 1);
  clipped.seeds = {2};  // another piece: it would run, were the clip the same
  const std::string e = testing::error_of<ConfigError>([&] { run_frontier(clipped, out); });
  EXPECT_NE(e.find("'" + grid_file + "' records other settings"), std::string::npos) << e;
  EXPECT_NE(e.find("train.grad_clip 0 (recorded) vs 1 (now)"), std::string::npos) << e;
  FrontierGrid bf16 = one_cell(dir / "out", 0);
  bf16.dtype = "bfloat16";
  const std::string d = testing::error_of<ConfigError>([&] { run_frontier(bf16, out); });
  EXPECT_NE(d.find("dtype (none) (recorded) vs bfloat16 (now)"), std::string::npos) << d;
  EXPECT_EQ(read_file(dir / "out/frontier.csv", "csv"), csv);
  EXPECT_EQ(run_frontier(one_cell(dir / "out", 0), out).size(), 1u);  // the same clip resumes
}

// A grid recorded on the CPU is not continued on a GPU: the device's kind
// is a recorded setting (checked here without one).
TEST(FrontierClip, TheDevicesKindIsRecordedOffTheCpu) {
  testing::TempDir dir;
  const std::string path = dir / "grid.txt";
  FrontierGrid g = one_cell(dir / "out", 1);
  check_or_record_settings(path, frontier_settings(g, 65));
  g.device = "cuda:0";
  const std::string e = testing::error_of<ConfigError>(
      [&] { check_or_record_settings(path, frontier_settings(g, 65)); });
  EXPECT_NE(e.find("device (none) (recorded) vs cuda (now)"), std::string::npos) << e;
}

}  // namespace
}  // namespace gpt2::app
