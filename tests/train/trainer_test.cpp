// The training run: exact resume, the non-finite guard, eval mode.

#include <gtest/gtest.h>
#include <torch/nn/utils/clip_grad.h>
#include <nlohmann/json.hpp>
#include <torch/types.h>

#include <cmath>
#include <fstream>

#include "gpt2/error.h"
#include "gpt2/fields/table.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/ops/torch_compat.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/loop.h"
#include "gpt2/train/optim.h"
#include "gpt2/train/trainer.h"
#include "test_util.h"

namespace gpt2 {
namespace {

// A char-level dataset from a few repeated lines, and the tiny model over it.
struct TinyRun {
  testing::TempDir dir;
  std::string data = dir / "data";
  TinyRun() {
    std::ofstream(dir / "text.txt") << std::string(
        "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n");
    for (int i = 0; i < 3; ++i) std::ofstream(dir / "text.txt", std::ios::app) << "You are all resolved rather to die than to famish?\n";
    prepare_dataset({dir / "text.txt"}, data, "char", 0.25);
  }
  GPT model(double dropout = 0.1) const {
    return GPT(testing::tiny_config()
                   .vocab_size(read_dataset_meta(data).vocab_size)
                   .dropout(dropout)
                   .init(InitOptions().seed(7)));
  }
  static TrainOptions options() {
    return TrainOptions().batch_size(3).grad_accum(2).max_steps(6).warmup_steps(2).lr(3e-3)
        .min_lr(3e-4).eval_interval(2).eval_steps(2).checkpoint_interval(0).seed(11);
  }
};

void expect_same_weights(const GPTImpl& a, const GPTImpl& b) {
  const auto pa = a.named_unique_parameters(), pb = b.named_unique_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(torch::equal(pa[i].value(), pb[i].value())) << pa[i].key();
  }
}

// 2N steps in one trainer == N steps, checkpoint, a new trainer from the
// file, N more: every loss and every weight bit for bit. Dropout is on, so
// torch's generator state must travel too; the evaluations in between must
// draw nothing from the training stream.
TEST(Trainer, ResumeFromCheckpointIsBitIdentical) {
  TinyRun run;
  Trainer one(run.model(), TinyRun::options(), run.data);
  std::vector<double> losses;
  for (int i = 0; i < 6; ++i) {
    losses.push_back(one.step().loss);
    if (i == 2) one.evaluate("val");
  }

  Trainer first(run.model(), TinyRun::options(), run.data);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(first.step().loss, losses[i]) << "step " << i + 1;
  first.evaluate("val");
  first.save(run.dir / "ckpt.pt");
  torch::manual_seed(999);  // a new process's generator is elsewhere

  Checkpoint c = load_checkpoint(run.dir / "ckpt.pt");
  Trainer second(c.model, parse_train_record(c, "ckpt").options, run.data);
  second.restore(c, run.dir / "ckpt.pt");
  EXPECT_EQ(second.steps_done(), 3);
  for (int i = 3; i < 6; ++i) EXPECT_EQ(second.step().loss, losses[i]) << "step " << i + 1;
  expect_same_weights(*one.model, *second.model);
}

// A checkpoint as Trainer::save wrote it before the options were typed
// attributes (TrainingState::train_options): the options as texts in
// extra's "trainer_options". It resumes, bit for bit, as the new form does.
TEST(Trainer, CheckpointWithTheOptionsInExtraStillResumes) {
  TinyRun run;
  Trainer one(run.model(), TinyRun::options(), run.data);
  std::vector<double> losses;
  for (int i = 0; i < 6; ++i) losses.push_back(one.step().loss);
  Trainer first(run.model(), TinyRun::options(), run.data);
  for (int i = 0; i < 3; ++i) first.step();
  first.save(run.dir / "new.pt");
  const Checkpoint written = load_checkpoint(run.dir / "new.pt");
  ASSERT_FALSE(written.train_options.empty());
  {
    // The old writer: the same weights, optimizer state and generators.
    const TrainOptions& o = TinyRun::options();
    auto optimizer = configure_optimizers(
        *written.model,
        torch::optim::AdamWOptions(o.lr()).betas({o.beta1(), o.beta2()}).weight_decay(o.weight_decay()));
    load_optimizer_state(run.dir / "new.pt", *optimizer);
    nlohmann::json options;
    for (const auto& [field, text] : field_texts(o)) options[field.key] = text;
    const nlohmann::json record = {{"trainer_options", options}, {"data_dir", run.data},
                                   {"best_val_step", -1}, {"best_val_loss", nullptr}};
    save_checkpoint(run.dir / "old.pt", *written.model,
                    {written.step, optimizer.get(), written.rng_state, record.dump(), {}});
  }
  torch::manual_seed(999);

  Checkpoint c = load_checkpoint(run.dir / "old.pt");
  EXPECT_TRUE(c.train_options.empty());
  const TrainRecord record = parse_train_record(c, run.dir / "old.pt");
  EXPECT_TRUE(field_differences(record.options, TinyRun::options()).empty()) << to_string(record.options);
  EXPECT_EQ(record.data_dir, run.data);
  Trainer second(c.model, record.options, record.data_dir);
  second.restore(c, run.dir / "old.pt");
  EXPECT_EQ(second.steps_done(), 3);
  for (int i = 3; i < 6; ++i) EXPECT_EQ(second.step().loss, losses[i]) << "step " << i + 1;
  expect_same_weights(*one.model, *second.model);
}

// A NaN loss never reaches the weights or the optimizer; after max_skips in
// a row the loop stops without writing a checkpoint.
TEST(Trainer, NonFiniteStepsAreSkippedThenStopTheRun) {
  TinyRun run;
  Trainer t(run.model(0.0), TinyRun::options().max_skips(2).checkpoint_interval(1), run.data);
  t.loss_hook = [](int64_t step, const torch::Tensor& loss) {
    return step >= 2 ? loss * std::nan("") : loss;  // steps 3, 4, ... (0-based 2, 3, ...)
  };
  std::vector<StepResult> steps;
  int checkpoints = 0;
  RunHooks hooks;
  hooks.on_step = [&](const StepResult& r) { steps.push_back(r); };
  hooks.on_checkpoint = [&](int64_t, const std::string&, double) {
    ++checkpoints;
    if (checkpoints == 2) {
      EXPECT_EQ(t.steps_done(), 2);
    }
  };
  GPT before{nullptr};
  hooks.on_eval = [&](int64_t step, double, bool) {
    if (step == 2) before = std::dynamic_pointer_cast<GPTImpl>(t.model->clone());
  };
  EXPECT_EQ(run_training(t, run.dir / "ckpt.pt", hooks), RunEnd::kDiverged);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_FALSE(steps[1].skipped);
  EXPECT_TRUE(steps[2].skipped && std::isnan(steps[2].loss));
  EXPECT_TRUE(steps[3].skipped);
  EXPECT_EQ(checkpoints, 2) << "checkpoints after steps 1 and 2 only";
  expect_same_weights(*before, *t.model);
  EXPECT_EQ(load_checkpoint(run.dir / "ckpt.pt").step, 2);
}

// A finite loss with a non-finite gradient is caught by the norm: the
// gradient of 0 * sqrt(0 * w) is NaN (0 * inf) while its value is 0.
TEST(Trainer, NonFiniteGradNormIsSkipped) {
  TinyRun run;
  Trainer t(run.model(0.0), TinyRun::options(), run.data);
  const torch::Tensor w = t.model->lm_head->weight;
  t.loss_hook = [w](int64_t, const torch::Tensor& loss) {
    return loss + 0 * (w.flatten()[0] * 0).sqrt();
  };
  const auto before = w.clone();
  const StepResult r = t.step();
  EXPECT_TRUE(std::isfinite(r.loss));
  EXPECT_FALSE(std::isfinite(r.grad_norm));
  EXPECT_TRUE(r.skipped);
  EXPECT_TRUE(torch::equal(before, w));
}

// Evaluation runs in eval mode (dropout 0.5 is off: calls agree exactly,
// before and after training draws) and hands the model back in train mode.
TEST(Trainer, EvaluateIsDeterministicInEvalModeWithoutGrad) {
  TinyRun run;
  Trainer t(run.model(0.5), TinyRun::options(), run.data);
  const double a = t.evaluate("val");
  t.step();  // consumes training draws; evaluation batches stay fixed
  Trainer u(run.model(0.5), TinyRun::options(), run.data);
  EXPECT_EQ(a, u.evaluate("val"));
  EXPECT_EQ(u.evaluate("val"), u.evaluate("val"));
  EXPECT_TRUE(t.model->is_training());
  EXPECT_TRUE(std::isfinite(a));
}

// The step reports the norm before clipping and clips to grad_clip: its
// update is torch's clip_grad_norm_ then the optimizer's step, to the bit.
// The clip's scaling happens inside the step. The library's AdamW pass
// (1.13) leaves the unclipped gradients it was given, which give the
// reference; torch's fused kernel (2.4 and later) stores the clipped ones it
// used, as torch's clip would have left them: their norm is the clip's
// share of the reported norm, and a step from them without a clip is the
// reference.
TEST(Trainer, GradNormIsReportedBeforeClippingAndTheUpdateIsClipped) {
  TinyRun run;
  const TrainOptions options = TinyRun::options().grad_clip(1e-3);
  Trainer t(run.model(0.0), options, run.data);
  GPT reference = std::dynamic_pointer_cast<GPTImpl>(t.model->clone());
  const StepResult r = t.step();
  EXPECT_GT(r.grad_norm, 1e-3);
  const auto params = t.model->unique_parameters(), ref = reference->unique_parameters();
  double sq = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    sq += params[i].grad().pow(2).sum().item<double>();
    ref[i].mutable_grad() = params[i].grad().clone();
  }
  auto opt = configure_optimizers(*reference, torch::optim::AdamWOptions(r.lr)
                                                  .betas({options.beta1(), options.beta2()})
                                                  .weight_decay(options.weight_decay()));
  if (compat::has_fused_adamw()) {
    const double clipped = 1e-3 * r.grad_norm / (r.grad_norm + 1e-6);
    EXPECT_NEAR(std::sqrt(sq), clipped, 1e-6 * clipped);
  } else {
    EXPECT_NEAR(std::sqrt(sq), r.grad_norm, 1e-6 * r.grad_norm);
    EXPECT_EQ(torch::nn::utils::clip_grad_norm_(ref, 1e-3), r.grad_norm);
  }
  opt->step();
  expect_same_weights(*t.model, *reference);
}

// An optimizer state from a model of other sizes is refused by name, and
// the optimizer is left as it was.
TEST(Trainer, OptimizerStateOfOtherShapesIsRefused) {
  TinyRun run;
  Trainer small(run.model(0.0), TinyRun::options(), run.data);
  small.step();
  small.save(run.dir / "small.pt");
  GPT wide(testing::tiny_config().n_embd(64).vocab_size(read_dataset_meta(run.data).vocab_size));
  Trainer other(wide, TinyRun::options(), run.data);
  other.step();
  Checkpoint c = load_checkpoint(run.dir / "small.pt");
  try {
    other.restore(c, run.dir / "small.pt");
    FAIL() << "restored an optimizer state of other shapes";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("has shape"), std::string::npos) << e.what();
  }
  EXPECT_EQ(other.steps_done(), 1);
}

// nanoGPT's dtype='bfloat16' on the CPU (the path a GPU takes, with the
// CPU's autocast): the same steps reach float32's val loss within 2%, and
// the weights and optimizer stay float32.
TEST(Trainer, Bfloat16AutocastTrainsAsFloat32Does) {
  TinyRun run;
  double val[2] = {0, 0}, start = 0;
  for (int i = 0; i < 2; ++i) {
    Trainer t(run.model(/*dropout=*/0), TinyRun::options().max_steps(24).warmup_steps(2).lr(1e-2),
              run.data);
    EXPECT_TRUE(t.device().is_cpu());
    t.set_precision(i == 0 ? torch::kFloat : torch::kBFloat16);
    EXPECT_EQ(t.precision(), i == 0 ? torch::kFloat : torch::kBFloat16);
    if (i == 0) start = t.evaluate("val");
    for (int step = 0; step < 24; ++step) ASSERT_FALSE(t.step().skipped);
    val[i] = t.evaluate("val");
    for (const auto& p : t.model->parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat);
  }
  EXPECT_LT(val[0], 0.8 * start) << "float32 did not learn: " << start << " -> " << val[0];
  EXPECT_LT(std::abs(val[1] - val[0]) / val[0], 0.02) << "float32 " << val[0] << ", bfloat16 " << val[1];
  Trainer t(run.model(), TinyRun::options(), run.data);
  const std::string half = testing::error_of<Error>([&] { t.set_precision(torch::kHalf); });
  EXPECT_NE(half.find("on cpu"), std::string::npos) << half;
  EXPECT_EQ(t.precision(), torch::kFloat);
}

}  // namespace
}  // namespace gpt2
