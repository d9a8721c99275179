#include "apps/gpt2/init_study/train_study.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

#include "apps/gpt2/init_study/study_types.h"
#include "apps/gpt2/init_study/train_study_report.h"
#include "apps/gpt2/common/shipped_corpus.h"
#include "apps/gpt2/common/runtime.h"
#include "apps/gpt2/common/train_presets.h"
#include "gpt2/error.h"
#include "gpt2/model/gpt.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/loop.h"

namespace gpt2::app {
namespace {

void require_positive(int64_t value, const char* flag) {
  if (value <= 0) throw ConfigError(fmt::format("{} must be positive, got {}", flag, value));
}

}  // namespace

void validate(const TrainStudyFlags& f) {
  require_positive(f.n_layer, "--n-layer");
  require_positive(f.n_embd, "--n-embd");
  require_positive(f.n_head, "--n-head");
  require_positive(f.block_size, "--block-size");
  require_positive(f.batch_size, "--batch-size");
  require_positive(f.steps, "--steps");
  require_positive(f.eval_interval, "--eval-interval");
  require_positive(f.eval_steps, "--eval-steps");
  for (double lr : f.lrs) {
    if (!(lr > 0) || !std::isfinite(lr)) {
      throw ConfigError(fmt::format("--lrs must be positive, finite learning rates, got {}", lr));
    }
  }
  // The shape's own rules (heads dividing the width, memory) with a stand-in
  // vocabulary: the data's is only known once it is prepared.
  study_model(f, 65, ResidualScale::kTwoPerBlock).validate();
  for (double lr : study_lrs(f)) study_options(f, lr).validate();
}

GPTConfig study_model(const TrainStudyFlags& f, int64_t vocab_size, ResidualScale scheme) {
  return train_preset("nano").model.n_layer(f.n_layer).n_embd(f.n_embd).n_head(f.n_head)
      .block_size(f.block_size).vocab_size(vocab_size)
      .init(InitOptions().seed(f.seed).residual(scheme));
}

TrainOptions study_options(const TrainStudyFlags& f, double lr) {
  return train_preset("nano").train.batch_size(f.batch_size).grad_accum(1).max_steps(f.steps)
      .lr(lr).min_lr(lr / 10).eval_interval(f.eval_interval).eval_steps(f.eval_steps)
      .checkpoint_interval(0).seed(f.seed);
}

std::vector<double> study_lrs(const TrainStudyFlags& f) {
  if (!f.lrs.empty()) return f.lrs;
  const double preset = train_preset("nano").train.lr();
  return {preset, preset * kHighLrFactor};
}

StudyRun train_study_run(const GPTConfig& config, const TrainOptions& options,
                         const std::string& data_dir, const std::string& scratch,
                         std::ostream& out, const LossHook& loss_hook) {
  StudyRun run;
  run.scheme = config.init().residual();
  run.lr = options.lr();
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  Trainer trainer(GPT(config), options, data_dir);
  trainer.loss_hook = loss_hook;
  RunHooks hooks;
  hooks.on_step = [&run](const StepResult& r) {
    run.train_loss.push_back(r.skipped ? std::nan("") : r.loss);
    run.skipped += r.skipped ? 1 : 0;
  };
  hooks.on_eval = [&](int64_t step, double val, bool) {
    run.val.emplace_back(step, val);
    fmt::print(out, "  {:<13} lr {:<8g} step {:>5}/{}  val {:.4f}  {:.0f}s\n",
               scheme_label(run.scheme), run.lr, step, options.max_steps(), val, elapsed());
    out.flush();
  };
  run.diverged = run_training(trainer, scratch, hooks) == RunEnd::kDiverged;
  std::filesystem::remove(scratch);
  run.steps = trainer.steps_done();
  run.seconds = elapsed();
  if (run.diverged) {
    fmt::print(out, "  {:<13} lr {:<8g} diverged: {} non-finite steps in a row up to step {}\n",
               scheme_label(run.scheme), run.lr, options.max_skips(), run.steps);
  }
  return run;
}

std::vector<StudyRun> run_train_study(const TrainStudyFlags& f, std::ostream& out) {
  validate(f);
  // Given data is read before OUT is made, so a wrong --data leaves nothing behind.
  if (!f.data.empty()) read_dataset_meta(f.data);
  std::filesystem::create_directories(f.out);
  const std::string data =
      f.data.empty() ? prepare_shipped_corpus(f.out + "/data-char", "char", out) : f.data;
  const DatasetMeta meta = read_dataset_meta(data);
  const std::vector<double> lrs = study_lrs(f);
  const GPTConfig shape = study_model(f, meta.vocab_size, ResidualScale::kTwoPerBlock);
  const RuntimeInfo rt = runtime_info();
  fmt::print(out, "model     {}\n", to_string(shape));
  fmt::print(out, "training  {}\n", to_string(study_options(f, lrs.front())));
  fmt::print(out, "runs      schemes N = 2L, N = L, none at lr {}: {} runs of {} steps on {} ({} "
             "ids), seed {}\n", fmt::join(lrs, ", "), lrs.size() * 3, f.steps, data,
             meta.vocab_size, f.seed);
  fmt::print(out, "runtime   {}\n", runtime_line(rt));
  out.flush();
  std::vector<StudyRun> runs;
  const std::string scratch = f.out + "/init_train_scratch.pt";
  for (double lr : lrs) {
    for (ResidualScale scheme : kStudySchemes) {
      runs.push_back(train_study_run(study_model(f, meta.vocab_size, scheme),
                                     study_options(f, lr), data, scratch, out));
    }
  }
  print_study_table(runs, out);
  write_study_files(runs, f, shape, out);
  return runs;
}

void add_train_study_command(CLI::App& study, int* rc) {
  auto f = std::make_shared<TrainStudyFlags>();
  CLI::App* cmd = study.add_subcommand(
      "train", "Train one deep, narrow model under each scheme at two learning rates");
  cmd->footer(fmt::format(
      "The recipe is the nano preset's (AdamW, warm-up, cosine to lr/10, clip 1, dropout 0) on "
      "the shipped corpus, char-level. Every run starts from the same seed and sees the same "
      "batches; a run diverges when {} steps in a row are non-finite. Writes OUT/init_train.csv, "
      "OUT/init_train_curves.csv and OUT/init_train.svg. The defaults took 21 CPU-minutes (42 "
      "minutes on 2 busy shared cores; docs/init.md).", study_options(*f, 1.0).max_skips()));
  const auto count = [cmd](const char* name, int64_t& value, const char* help) {
    cmd->add_option(name, value, help)->capture_default_str();
  };
  count("--n-layer", f->n_layer, "Blocks (deep)");
  count("--n-embd", f->n_embd, "Width (narrow)");
  count("--n-head", f->n_head, "Heads; must divide --n-embd");
  count("--block-size", f->block_size, "Tokens per sequence");
  count("--batch-size", f->batch_size, "Sequences per step");
  count("--steps", f->steps, "Optimizer steps per run");
  count("--eval-interval", f->eval_interval, "Steps between val evaluations");
  count("--eval-steps", f->eval_steps, "Batches per val evaluation");
  cmd->add_option("--lrs", f->lrs,
                  fmt::format("Peak learning rates (default: the nano preset's {:g} and {:g} x it)",
                              train_preset("nano").train.lr(), kHighLrFactor))
      ->delimiter(',');
  cmd->add_option("--seed", f->seed, "Seed of the init, the batches and dropout")
      ->capture_default_str();
  cmd->add_option("--data", f->data, "Prepared data folder (default: the shipped corpus, "
                                     "char-level, prepared into OUT/data-char)");
  cmd->add_option("--out", f->out, "Folder for the CSVs, the picture and the prepared data")
      ->capture_default_str();
  cmd->callback([f, rc] {
    run_train_study(*f, std::cout);
    *rc = 0;
  });
}

}  // namespace gpt2::app
