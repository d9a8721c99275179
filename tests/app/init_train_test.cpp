// `gpt2 init-study train` on a tiny model: every scheme at every rate, the
// files it writes, the loss at init, divergence, and that its N = 2L run is
// a plain training run of the library's default model.

#include "apps/gpt2/init_study/train_study.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "apps/gpt2/init_study/study_types.h"
#include "apps/gpt2/init_study/train_study_report.h"
#include "apps/gpt2/common/train_presets.h"
#include "gpt2/error.h"
#include "gpt2/model/gpt.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/trainer.h"
#include "test_util.h"

namespace gpt2::app {
namespace {

TrainStudyFlags tiny_flags(const std::string& out) {
  TrainStudyFlags f;
  f.n_layer = 2;
  f.n_embd = 16;
  f.n_head = 2;
  f.block_size = 16;
  f.batch_size = 4;
  f.steps = 6;
  f.eval_interval = 3;
  f.eval_steps = 2;
  f.seed = 5;
  f.out = out;
  return f;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream file(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  return lines;
}

// A few lines of char-level text prepared into DIR/data.
std::string small_data(const testing::TempDir& dir) {
  std::ofstream(dir / "text.txt") << std::string(
      "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n"
      "First Citizen:\nYou are all resolved rather to die than to famish?\n\nAll:\nResolved.\n");
  prepare_dataset({dir / "text.txt"}, dir / "data", "char", 0.3);
  return dir / "data";
}

// The whole command on the shipped corpus (prepared into OUT), 6 steps of a
// 2-block model: 3 schemes x the default 2 rates, a table, two CSVs with a
// row per run and per step or evaluation, and the picture.
TEST(InitTrainStudy, TinyStudyRunsEverySchemeAtEveryLrAndWritesItsFiles) {
  testing::TempDir dir;
  const TrainStudyFlags f = tiny_flags(dir / "out");
  std::ostringstream out;
  const std::vector<StudyRun> runs = run_train_study(f, out);
  const std::vector<double> lrs = study_lrs(f);
  ASSERT_EQ(lrs.size(), 2u);
  EXPECT_EQ(lrs[1], kHighLrFactor * train_preset("nano").train.lr());
  ASSERT_EQ(runs.size(), 6u);
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].lr, lrs[i / 3]) << i;
    EXPECT_EQ(runs[i].scheme, kStudySchemes[i % 3]) << i;
    EXPECT_FALSE(runs[i].diverged) << i;
    EXPECT_EQ(runs[i].steps, 6) << i;
    EXPECT_EQ(runs[i].train_loss.size(), 6u) << i;
    ASSERT_EQ(runs[i].val.size(), 3u) << i;  // steps 0, 3, 6
    EXPECT_EQ(runs[i].val.back().first, 6) << i;
  }
  const auto summary = lines_of(dir / "out/init_train.csv");
  ASSERT_EQ(summary.size(), 7u);
  EXPECT_EQ(summary[0], "scheme,lr,end,steps,skipped,first_loss,val_loss,val_step,seconds");
  EXPECT_EQ(summary[6].rfind("none,0.012,finished,6,0,", 0), 0u) << summary[6];
  for (const auto& line : summary) EXPECT_EQ(std::count(line.begin(), line.end(), ','), 8) << line;
  const auto curves = lines_of(dir / "out/init_train_curves.csv");
  EXPECT_EQ(curves.size(), 1u + 6u * (6u + 3u));
  EXPECT_EQ(curves[0], "scheme,lr,step,split,loss");
  std::ifstream svg(dir / "out/init_train.svg");
  const std::string picture((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(picture.find("<svg"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir / "out/data-char/train.bin"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out/init_train_scratch.pt"));
  EXPECT_NE(out.str().find("N = 1 (none)"), std::string::npos);
  EXPECT_NE(out.str().find("finished"), std::string::npos);
}

// At init every scheme predicts close to uniformly: the first step's loss is
// ln(vocab) plus about sigma^2 / 2 for logits of std sigma = 0.02 * sqrt(16)
// (0.003), and the mean over 64 tokens of a near-uniform prediction moves by
// about sigma / 8 (0.01); 0.05 is several times both. The schemes must still
// differ (their c_proj weights do), so the losses are not all equal.
TEST(InitTrainStudy, FirstLossIsLnVocabUnderEverySchemeYetTheSchemesDiffer) {
  testing::TempDir dir;
  const std::string data = small_data(dir);
  const int64_t vocab = read_dataset_meta(data).vocab_size;
  TrainStudyFlags f = tiny_flags(dir / "out");
  f.steps = 1;
  std::vector<double> first;
  std::ostringstream out;
  for (ResidualScale scheme : kStudySchemes) {
    const StudyRun run = train_study_run(study_model(f, vocab, scheme), study_options(f, 3e-3),
                                         data, dir / "scratch.pt", out);
    ASSERT_EQ(run.train_loss.size(), 1u);
    first.push_back(run.train_loss[0]);
    EXPECT_NEAR(first.back(), std::log(static_cast<double>(vocab)), 0.05) << to_string(scheme);
  }
  EXPECT_NE(first[0], first[1]);
  EXPECT_NE(first[0], first[2]);
}

// The study's N = 2L run is a plain Trainer run of a GPTConfig left at the
// library's defaults (init N = 2L, dropout 0, tanh GELU) on the nano recipe:
// the same loss at every step, bit for bit. The unscaled run is not.
TEST(InitTrainStudy, TwoPerBlockRunIsAPlainTrainerRunWithTheDefaultInit) {
  testing::TempDir dir;
  const std::string data = small_data(dir);
  const int64_t vocab = read_dataset_meta(data).vocab_size;
  const TrainStudyFlags f = tiny_flags(dir / "out");
  const double lr = 1e-2;
  std::ostringstream out;
  const StudyRun two = train_study_run(study_model(f, vocab, ResidualScale::kTwoPerBlock),
                                       study_options(f, lr), data, dir / "s.pt", out);
  const StudyRun none = train_study_run(study_model(f, vocab, ResidualScale::kNone),
                                        study_options(f, lr), data, dir / "s.pt", out);
  const GPTConfig plain = GPTConfig().n_layer(2).n_embd(16).n_head(2).block_size(16)
                              .vocab_size(vocab).init(InitOptions().seed(5));
  Trainer trainer(GPT(plain), train_preset("nano").train.batch_size(4).grad_accum(1).max_steps(6)
                                  .lr(lr).min_lr(lr / 10).eval_steps(2).seed(5), data);
  ASSERT_EQ(two.train_loss.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    const double loss = trainer.step().loss;
    EXPECT_EQ(two.train_loss[i], loss) << "step " << i + 1;
    EXPECT_NE(none.train_loss[i], loss) << "step " << i + 1;
  }
}

// A run whose loss turns NaN is stopped by the trainer's guard after
// max_skips steps in a row, and reported as diverged in the table.
TEST(InitTrainStudy, NonFiniteLossesMarkTheRunDiverged) {
  testing::TempDir dir;
  const std::string data = small_data(dir);
  TrainStudyFlags f = tiny_flags(dir / "out");
  f.steps = 50;
  const TrainOptions options = study_options(f, 3e-3);
  std::ostringstream out;
  const StudyRun run = train_study_run(
      study_model(f, read_dataset_meta(data).vocab_size, ResidualScale::kNone), options, data,
      dir / "s.pt", out, [](int64_t step, const torch::Tensor& loss) {
        return step >= 2 ? loss * std::numeric_limits<double>::quiet_NaN() : loss;
      });
  EXPECT_TRUE(run.diverged);
  EXPECT_EQ(run.steps, 2 + options.max_skips());
  EXPECT_EQ(run.skipped, options.max_skips());
  EXPECT_TRUE(std::isfinite(run.train_loss[1]));
  EXPECT_TRUE(std::isnan(run.train_loss.back()));
  std::ostringstream table;
  print_study_table({run}, table);
  EXPECT_NE(table.str().find("diverged"), std::string::npos) << table.str();
}

// Flags out of range are refused with their name and value before OUT is made.
TEST(InitTrainStudy, BadFlagsAreRefusedBeforeAnythingIsWritten) {
  testing::TempDir dir;
  const auto refuses = [&](TrainStudyFlags f, const std::string& fragment) {
    std::ostringstream out;
    try {
      run_train_study(f, out);
      ADD_FAILURE() << "accepted; expected: " << fragment;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(f.out)) << fragment;
  };
  TrainStudyFlags f = tiny_flags(dir / "out");
  f.steps = 0;
  refuses(f, "--steps must be positive, got 0");
  f = tiny_flags(dir / "out");
  f.lrs = {3e-3, std::numeric_limits<double>::infinity()};
  refuses(f, "--lrs must be positive, finite learning rates, got inf");
  f = tiny_flags(dir / "out");
  f.n_head = 3;
  refuses(f, "n_embd 16 is not divisible by n_head 3");
}

}  // namespace
}  // namespace gpt2::app
