// `gpt2 init-study frontier`: the smoke profile end to end (the CSV's
// columns, resume, a seed repeating its losses bit for bit), the settings
// check, divergence, the probe against the block's own attention, and the
// report's arithmetic on hand-made rows.

#include "apps/gpt2/init_study/frontier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "apps/gpt2/init_study/frontier_csv.h"
#include "apps/gpt2/init_study/frontier_probe.h"
#include "apps/gpt2/init_study/frontier_report.h"
#include "apps/gpt2/init_study/frontier_run.h"
#include "gpt2/error.h"
#include "gpt2/model/gpt.h"
#include "app/frontier_grids.h"
#include "gpt2/train/dataset.h"
#include "test_util.h"

namespace gpt2::app {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream file(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  return lines;
}

// A row without its wall time, the one cell a repeated run may change.
std::string without_seconds(const std::string& row) { return row.substr(0, row.rfind(',')); }

// The smoke profile as the test suite runs it: 4 schemes x 2 depths x 3
// rates, a row each with the pinned columns, the table and the pictures.
// Run again, it finds every row and runs nothing. With its last rows cut
// (and a partial line, as a kill leaves) it runs those cells again and
// writes the same rows bit for bit: a seed repeats its losses exactly.
TEST(Frontier, SmokeProfileWritesItsRowsResumesAndRepeatsASeedBitForBit) {
  testing::TempDir dir;
  FrontierGrid grid = frontier_profile("smoke");
  grid.out = dir / "out";
  std::ostringstream first;
  const std::vector<FrontierRun> runs = run_frontier(grid, first);
  ASSERT_EQ(runs.size(), 4u * 2u * 3u) << first.str();
  const std::string csv = dir / "out/frontier.csv";
  const std::vector<std::string> rows = lines_of(csv);
  ASSERT_EQ(rows.size(), 1u + runs.size());
  EXPECT_EQ(rows[0],
            "scheme,depth,lr,seed,steps,start_val,final_val,best_val,diverged,skipped,first_skip,"
            "max_grad_norm,rms_start,rms_end,max_attn_logit,seconds");
  EXPECT_EQ(rows[1].rfind("2n,2,0.001,1,24,", 0), 0u) << rows[1];
  EXPECT_EQ(rows.back().rfind("zero,4,0.1,1,", 0), 0u) << rows.back();
  for (const FrontierRun& r : runs) {
    EXPECT_NEAR(r.start_val, std::log(65.0), 0.1) << frontier_row(r);  // ln(vocab) at init
    EXPECT_TRUE(std::isfinite(r.max_attn_logit)) << frontier_row(r);
    EXPECT_GT(r.max_grad_norm, 0) << frontier_row(r);
  }
  for (const char* name : {"frontier_table.txt", "frontier_loss.svg", "frontier_lr.svg",
                           "frontier_grid.txt"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / ("out/" + std::string(name)))) << name;
  }
  EXPECT_NE(first.str().find("24 to run"), std::string::npos) << first.str();
  EXPECT_NE(first.str().find("0 left, ETA"), std::string::npos) << first.str();

  std::ostringstream second;
  EXPECT_EQ(run_frontier(grid, second).size(), runs.size());
  EXPECT_NE(second.str().find("24 in " + csv + " already, 0 to run"), std::string::npos)
      << second.str();
  EXPECT_EQ(lines_of(csv), rows);

  {
    std::ofstream cut(csv, std::ios::trunc);
    for (size_t i = 0; i + 3 < rows.size(); ++i) cut << rows[i] << '\n';
    cut << rows[rows.size() - 3].substr(0, 20);  // a kill in the middle of a row
  }
  std::ostringstream third;
  run_frontier(grid, third);
  EXPECT_NE(third.str().find("dropped a partial last line (20 bytes)"), std::string::npos)
      << third.str();
  EXPECT_NE(third.str().find("3 to run"), std::string::npos) << third.str();
  const std::vector<std::string> again = lines_of(csv);
  ASSERT_EQ(again.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(without_seconds(again[i]), without_seconds(rows[i])) << "line " << i + 1;
  }
}

// A kill before the first row is whole leaves an empty CSV or a cut
// header: either reads as no rows, and the next row starts the file with
// its header, so the study resumes.
TEST(FrontierCsv, AnEmptyOrCutHeaderReadsAsNoRowsAndTheNextRowWritesIt) {
  testing::TempDir dir;
  FrontierRun run;
  run.cell = FrontierCell{ResidualScale::kTwoPerBlock, 4, 1e-3, 0};
  const std::string header(kFrontierColumns);
  for (const std::string& left : {std::string(), header.substr(0, 9)}) {
    const std::string csv = dir / "frontier.csv";
    std::ofstream(csv, std::ios::trunc) << left;
    std::ostringstream out;
    EXPECT_TRUE(read_frontier_csv(csv, out).empty()) << "'" << left << "'";
    append_frontier_row(csv, run);
    const std::vector<std::string> lines = lines_of(csv);
    ASSERT_EQ(lines.size(), 2u) << "'" << left << "'";
    EXPECT_EQ(lines[0], header);
    EXPECT_EQ(read_frontier_csv(csv, out).size(), 1u);
  }
}

// What bfloat16 makes of a blow-up: a finite loss that settles below the
// loss at init, after the run had learned more. Char-level Shakespeare:
// ln 65 = 4.17 at init, 3.31 for the letters' frequencies alone.
TEST(FrontierDiverged, ARunThatGaveBackAQuarterOfItsGainStoppedTraining) {
  EXPECT_TRUE(frontier_diverged(4.17, 2.50, 3.31, false));   // back to the frequencies
  EXPECT_TRUE(frontier_diverged(4.17, 2.50, 2.93, false));   // 0.43 of a 1.67 gain
  EXPECT_FALSE(frontier_diverged(4.17, 2.50, 2.91, false));  // 0.41: within a quarter
  EXPECT_FALSE(frontier_diverged(4.17, 2.50, 2.50, false));
  EXPECT_FALSE(frontier_diverged(4.17, 3.31, 3.31, false));  // a slow run, still learning
  EXPECT_FALSE(frontier_diverged(4.17, 4.17, 4.17, false));  // never gained, gave nothing back
  EXPECT_TRUE(frontier_diverged(4.17, 4.17, 4.20, false));   // above the loss at init
  EXPECT_TRUE(frontier_diverged(4.17, 2.50, std::nan(""), false));
  EXPECT_TRUE(frontier_diverged(4.17, 2.50, 2.50, true));    // the guard stopped it
}

// A CSV of the columns before best_val (the CPU study's, docs/init/frontier)
// still reads, each row's best the lower of its two losses; a grid does not
// append rows of other columns to it.
TEST(FrontierCsv, TheColumnsBeforeBestValReadButTakeNoNewRows) {
  testing::TempDir dir;
  FrontierGrid g = testing::one_cell(dir / "out");
  std::filesystem::create_directories(g.out);
  const std::string csv = dir / "out/frontier.csv";
  std::ofstream(csv) << kFrontierColumnsWithoutBest << "\n"
                     << "2n,4,0.0001,1,250,4.18,3.31,0,0,,3.5,0.03,0.11,0.27,5.08\n"
                     << "n,4,0.1,1,250,4.18,4.30,1,0,,9.5,0.03,0.11,0.27,5.08\n";
  std::ostringstream out;
  bool current = true;
  const std::vector<FrontierRun> rows = read_frontier_csv(csv, out, &current);
  EXPECT_FALSE(current);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].best_val, 3.31);
  EXPECT_EQ(rows[1].best_val, 4.18);
  EXPECT_TRUE(rows[1].diverged);
  try {
    run_frontier(g, out);
    ADD_FAILURE() << "appended to the earlier columns";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("columns of an earlier version (no best_val)"),
              std::string::npos) << e.what();
  }
  EXPECT_EQ(lines_of(csv).size(), 3u);
}

using testing::one_cell;

// Another recorded setting is refused, naming it with both values; another
// selection of cells is a piece of the same grid and runs.
TEST(Frontier, OtherSettingsAreRefusedNamingThemOtherCellsAreAPiece) {
  testing::TempDir dir;
  std::ostringstream out;
  run_frontier(one_cell(dir / "out"), out);
  FrontierGrid longer = one_cell(dir / "out");
  longer.steps = 5;
  longer.n_embd = 64;
  try {
    run_frontier(longer, out);
    ADD_FAILURE() << "accepted other settings";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("train.max_steps 4 (recorded) vs 5 (now)"), std::string::npos) << what;
    EXPECT_NE(what.find("model.n_embd 32 (recorded) vs 64 (now)"), std::string::npos) << what;
  }
  FrontierGrid piece = one_cell(dir / "out");
  piece.seeds = {2};
  EXPECT_EQ(run_frontier(piece, out).size(), 2u);
}

// Flags out of range are refused with their name and value before OUT is made.
TEST(Frontier, BadSettingsAreRefusedBeforeAnythingIsWritten) {
  testing::TempDir dir;
  const auto refuses = [&](const FrontierGrid& g, const std::string& fragment) {
    std::ostringstream out;
    try {
      run_frontier(g, out);
      ADD_FAILURE() << "accepted; expected: " << fragment;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(g.out)) << fragment;
  };
  FrontierGrid g = one_cell(dir / "out");
  g.lrs = {1e-2, std::numeric_limits<double>::infinity()};
  refuses(g, "--lrs must be positive, finite learning rates, got inf");
  g = one_cell(dir / "out");
  g.seeds.clear();
  refuses(g, "--seeds names no value");
  g = one_cell(dir / "out");
  g.warmup_steps = 9;
  refuses(g, "--warmup-steps must be in [0, --steps 4], got 9");
}

// A run whose loss turns NaN is stopped by the guard after max_skips steps
// in a row and marked diverged, with its first skipped step.
TEST(Frontier, NonFiniteLossesMarkTheRunDivergedWithItsFirstSkip) {
  testing::TempDir dir;
  std::ostringstream ignored;
  FrontierGrid g = one_cell(dir / "out");
  g.steps = 40;
  const std::string data = dir / "data";
  prepare_dataset({GPT2_SHAKESPEARE}, data, "char", 0.1);
  const FrontierCell cell{ResidualScale::kTwoPerBlock, 2, 1e-2, 1};
  const FrontierRun run = train_cell(g, cell, data, [](int64_t step, const torch::Tensor& loss) {
    return step >= 3 ? loss * std::numeric_limits<double>::quiet_NaN() : loss;
  });
  EXPECT_TRUE(run.diverged);
  EXPECT_EQ(run.first_skip, 4);
  EXPECT_EQ(run.skipped, frontier_options(g, cell).max_skips());
  EXPECT_EQ(run.steps, 3 + run.skipped);
  const FrontierRun back = parse_frontier_row(frontier_row(run), "test");
  EXPECT_EQ(frontier_row(back), frontier_row(run));
  EXPECT_EQ(clipped_loss(run), run.start_val);
}

// The probe's logits are the ones the block's (fused) attention uses:
// softmax(logits) @ v through c_proj reproduces attn(ln_1(x)). Under the
// zero scheme the stream after the last block is the embedding at init.
TEST(FrontierProbe, LogitsReproduceTheBlocksAttentionAndZeroInitKeepsTheEmbedding) {
  GPT model(testing::tiny_config().init(InitOptions().seed(6)));
  model->eval();
  torch::NoGradGuard no_grad;
  const auto idx = torch::randint(96, {3, 16}, torch::kLong);
  const auto x = model->embed(idx);  // (B, T, C)
  Block block = model->block(0);
  const auto att = attention_logits(*block, x);  // (B, nh, T, T)
  const int64_t B = 3, T = 16, C = 32, nh = 4;
  const auto v = block->attn->c_attn(block->ln_1(x)).split(C, 2)[2].view({B, T, nh, C / nh})
                     .transpose(1, 2);
  const auto y = torch::matmul(torch::softmax(att, -1), v).transpose(1, 2).reshape({B, T, C});
  // float32 sums of 32 products: agreement to 1e-5 of outputs of size ~0.1.
  EXPECT_TRUE(torch::allclose(block->attn->c_proj(y), block->attn(block->ln_1(x)), 1e-4, 1e-5));
  EXPECT_TRUE(std::isinf(att[0][0][0][1].item<float>()));  // a key after its query

  GPT zero(testing::tiny_config().init(InitOptions().seed(6).residual(ResidualScale::kZero)));
  const Probe p = probe(*zero, {{idx, idx}});
  const double embedding_rms = zero->embed(idx).square().mean().sqrt().item<double>();
  EXPECT_NEAR(p.rms, embedding_rms, 1e-6 * embedding_rms);
}

// A block whose attention logits are NaN makes the probe's largest logit
// NaN, whichever block it is: no finite logit of another block hides it.
TEST(FrontierProbe, ANaNLogitIsTheLargestLogitsValue) {
  for (int64_t nan_block : {0, 1}) {
    GPT model(testing::tiny_config().init(InitOptions().seed(6)));
    const auto idx = torch::randint(96, {2, 8}, torch::kLong);
    {
      torch::NoGradGuard no_grad;
      model->block(static_cast<size_t>(nan_block))->attn->c_attn->weight.fill_(std::nan(""));
    }
    EXPECT_TRUE(std::isnan(probe(*model, {{idx, idx}}).max_attn_logit)) << "block " << nan_block;
  }
  EXPECT_TRUE(std::isnan(larger_logit(std::nan(""), 1.0)));
  EXPECT_TRUE(std::isnan(larger_logit(1.0, std::nan(""))));
  EXPECT_EQ(larger_logit(1.0, 2.0), 2.0);
}

FrontierRun row(ResidualScale s, double lr, uint64_t seed, double final_val, bool diverged) {
  FrontierRun r;
  r.cell = {s, 4, lr, seed};
  r.start_val = 4.0;
  r.final_val = final_val;
  r.diverged = diverged;
  return r;
}

// Wortsman et al.'s sensitivity by hand: seed 1's clipped losses 3, 2, 4
// (the diverged run counts as its loss at init, 4) have mean 3 and best 2:
// E = 1; seed 2's 3, 2.5, 3.5: E = 0.5. The best lr has the lowest mean
// (2.25 at 1e-2); the stable range ends below the first divergence.
TEST(FrontierReport, SensitivityBestAndLargestStableLrByHand) {
  const auto s = ResidualScale::kNone;
  const std::vector<FrontierRun> runs = {
      row(s, 1e-3, 1, 3.0, false), row(s, 1e-2, 1, 2.0, false), row(s, 1e-1, 1, 9.0, true),
      row(s, 1e-3, 2, 3.0, false), row(s, 1e-2, 2, 2.5, false), row(s, 1e-1, 2, 3.5, false)};
  const auto summaries = frontier_summaries(runs);
  ASSERT_EQ(summaries.size(), 1u);
  const FrontierSummary& f = summaries[0];
  EXPECT_EQ(f.runs, 6);
  EXPECT_EQ(f.diverged, 1);
  EXPECT_EQ(f.best_lr, 1e-2);
  EXPECT_DOUBLE_EQ(f.best_mean, 2.25);
  EXPECT_DOUBLE_EQ(f.best_lo, 2.0);
  EXPECT_DOUBLE_EQ(f.best_hi, 2.5);
  EXPECT_EQ(f.largest_stable_lr, 1e-2);
  EXPECT_DOUBLE_EQ(f.sensitivity, 0.75);
  EXPECT_DOUBLE_EQ(f.sensitivity_lo, 0.5);
  EXPECT_DOUBLE_EQ(f.sensitivity_hi, 1.0);
  const auto points = frontier_points(runs);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_DOUBLE_EQ(points[2].mean, 3.75);  // (4 + 3.5) / 2
  EXPECT_EQ(points[2].diverged, 1);
}

}  // namespace
}  // namespace gpt2::app
