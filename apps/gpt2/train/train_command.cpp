#include "apps/gpt2/train/train_command.h"

#include <ATen/Context.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/train/closing_sample.h"
#include "apps/gpt2/train/launch.h"
#include "apps/gpt2/train/nanogpt_resume.h"
#include "apps/gpt2/train/run_config.h"
#include "apps/gpt2/train/run_start.h"
#include "apps/gpt2/plot/loss_plot.h"
#include "apps/gpt2/common/progress.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/runtime/runtime.h"
#include "apps/gpt2/common/shipped_corpus.h"
#include "apps/gpt2/common/stop_signal.h"
#include "apps/gpt2/common/train_presets.h"
#include "apps/gpt2/train/train_ranks.h"
#include "gpt2/error.h"
#include "gpt2/file/output_dir.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/io/model_source.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/loop.h"
#include "gpt2/train/train_log.h"

namespace gpt2::app {
namespace {

// The data folder: --data, or the shipped corpus prepared once into OUT
// (by each machine's local rank 0 while its other ranks wait).
std::string data_dir(const TrainFlags& flags, const std::string& tokenizer, DataParallel* dp) {
  if (!flags.data.empty()) return flags.data;
  const std::string dir = flags.out + "/data-" + tokenizer;
  if (!dp || dp->env().local_rank == 0) {
    prepare_shipped_corpus(dir, tokenizer, std::cout);
    std::cout.flush();
  }
  if (dp) dp->any(false);  // a barrier: the data is there after it
  return dir;
}

std::string duration(double s) {
  return s >= 60 ? fmt::format("{}m{:02}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60)
                 : fmt::format("{:.1f}s", s);
}

}  // namespace

int run_train(const TrainFlags& flags) {
  keep_freed_memory();
  // Before any worker starts: the run's place, then the device. A
  // launcher's world of one on a GPU forms a group of one where NCCL is,
  // so that one GPU runs the data-parallel path.
  const DistEnv env = read_dist_env({}, is_cuda_flag(flags.device) && has_nccl());
  check_launch(flags.dist_timeout, flags.nproc, env);
  const torch::Device device = rank_device(flags.device, flags.nproc, env);
  const torch::ScalarType dtype = dtype_from_flag(flags.dtype);
  // As nanoGPT's train.py: float32 products on a GPU may use TF32. The
  // command asks for it; the library never sets it.
  if (device.is_cuda()) at::globalContext().setFloat32MatmulPrecision("high");
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(flags.dist_timeout * 1e3));
  if (flags.nproc > 1) {
    return launch_local_workers(flags.nproc, without_nproc(own_command_line()), timeout);
  }
  const std::shared_ptr<DataParallel> dp = join_run(env, timeout, device);
  // Rank 0 alone writes files and tells the story; the others print their
  // start and end lines and errors.
  const bool lead = !dp || dp->rank() == 0;
  std::FILE* out = lead ? stdout : null_sink();
  if (!flags.data.empty()) read_dataset_meta(flags.data);  // bad data is refused before --out is made
  {  // flag values that do not parse, and a recipe out of bounds, are refused
     // before anything is written (resolve_run_config checks it all again)
    GPTConfig config;
    flags.model.fields.apply_to(config);
    const bool finetune = !flags.init_from.empty() && !flags.model.preset_given;
    TrainOptions options = train_preset(finetune ? "finetune" : flags.model.preset).train;
    flags.train.apply_to(options);
    if (!flags.resume) options.validate();
  }
  const std::string ckpt = flags.out + "/ckpt.pt", log_path = flags.out + "/log.csv";
  // --init-from: the file is read (and refused) before anything is written.
  std::optional<LoadedModel> from_file;
  std::optional<Pretrained> pretrained;
  std::vector<std::string> notes;
  ModelFormat format = ModelFormat::kCheckpoint;
  std::string preset_name = flags.model.preset;
  // A fine-tune written over the model it starts from would replace it at
  // its first checkpoint.
  refuse_writing_over_inputs(ckpt, {{flags.init_from, "--init-from"}});
  // Another run's checkpoint is replaced only when asked, before anything
  // (the shipped corpus's preparation included) is written.
  if (lead && std::filesystem::is_directory(flags.out)) FolderLock{flags.out};  // not in use
  if (lead && !flags.resume && !flags.overwrite && std::filesystem::exists(ckpt)) {
    throw FileError(fmt::format("'{}' holds a run ('{}'): continue it with --resume, replace it "
                                "with --overwrite, or give another --out", flags.out, ckpt));
  }
  if (!flags.init_from.empty()) {
    if (flags.resume) throw ConfigError("--init-from and --resume exclude each other");
    from_file.emplace(load_model_file(flags.init_from));
    pretrained = Pretrained{from_file->model->config, flags.init_from};
    notes = from_file->notes;
    format = from_file->format;
    if (!flags.model.preset_given) preset_name = "finetune";
  }
  const TrainPreset preset = train_preset(preset_name);
  std::optional<Checkpoint> c;
  std::optional<NanoGPTResume> nano;  // OUT/ckpt.pt is nanoGPT's train.py's
  std::optional<SavedRun> saved;
  std::string data;
  if (flags.resume) {
    if (!std::filesystem::exists(ckpt)) {
      throw FileError(fmt::format("nothing to resume: no checkpoint '{}'", ckpt));
    }
    nano = read_nanogpt_resume(ckpt, flags.data, out);
    if (nano) {
      saved = nano->saved;
      data = nano->data;
    } else {
      c.emplace(load_checkpoint(ckpt));
      const TrainRecord record = parse_train_record(*c, ckpt);
      saved = SavedRun{c->model->config, record.options, ckpt};
      data = flags.data.empty() ? record.data_dir : flags.data;
    }
  } else {
    // The shipped corpus in the tokenizer of the model to fine-tune.
    const bool bpe = pretrained && pretrained->model.vocab_size() >= GPTConfig().vocab_size();
    // The shipped corpus is prepared into OUT: its folder is checked first.
    if (lead && flags.data.empty()) make_output_dir(flags.out, "run folder (--out)");
    data = data_dir(flags, pretrained ? (bpe ? "gpt2" : "char") : preset.tokenizer, dp.get());
  }
  const DatasetMeta meta = read_dataset_meta(data);
  const RunConfig run = resolve_run_config(preset, flags.model, flags.train, meta, data,
                                           saved ? &*saved : nullptr,
                                           pretrained ? &*pretrained : nullptr);
  if (c || nano) check_steps_left(ckpt, c ? c->step : nano->checkpoint.run.iter_num, run.train);
  // Bad flags are refused before OUT is made. Rank 0 then holds it for the
  // whole run: a second trainer given the same --out is refused instead of
  // writing between this one's files.
  std::optional<FolderLock> lock;
  if (lead) {
    make_output_dir(flags.out, "run folder (--out)");
    lock.emplace(flags.out);
  }
  std::unique_ptr<Trainer> trainer;
  if (c) {
    c->model->to(device);
    trainer = std::make_unique<Trainer>(c->model, run.train, data, dp);
    trainer->restore(*c, ckpt);
    fmt::print(out, "resumed   {} at step {}\n", ckpt, c->step);
  } else if (nano) {
    nano->checkpoint.model->to(device);
    trainer = std::make_unique<Trainer>(nano->checkpoint.model, run.train, data, dp);
    trainer->restore(nano->checkpoint, ckpt);
    fmt::print(out, "resumed   {} (nanoGPT) at step {}\n", ckpt, nano->checkpoint.run.iter_num);
  } else {
    if (std::filesystem::exists(ckpt)) {
      fmt::print(out, "fresh     replacing {} (--overwrite)\n", ckpt);
    }
    GPT model = from_file ? with_config(*from_file->model, run.model) : GPT(run.model);
    from_file.reset();  // the run trains the copy
    model->to(device);
    trainer = std::make_unique<Trainer>(std::move(model), run.train, data, dp);
  }
  Trainer& t = *trainer;
  t.set_precision(dtype);
  const TrainOptions& o = t.options();
  RunStart start_lines{notes, pretrained ? &*pretrained : nullptr, format, meta,
                       dp ? dp->world_size() : 1, device, flags.dtype, ckpt, log_path};
  print_run_start(out, t, start_lines);

  if (!flags.nan_steps.empty()) {
    t.loss_hook = [steps = flags.nan_steps](int64_t step, const torch::Tensor& loss) {
      const bool hit = std::find(steps.begin(), steps.end(), step + 1) != steps.end();
      return hit ? loss * std::numeric_limits<double>::quiet_NaN() : loss;
    };
  }
  std::optional<TrainLog> log;
  if (lead) log.emplace(log_path, flags.resume ? std::optional<int64_t>(t.steps_done()) : std::nullopt);
  Progress progress(out, lead && ::isatty(STDOUT_FILENO) != 0, o.max_steps(), t.steps_done(),
                    std::max<int64_t>(1, o.max_steps() / 30));
  RunHooks hooks;
  hooks.on_step = [&](const StepResult& r) { if (log) log->step(r); progress.step(r); };
  hooks.on_eval = [&](int64_t step, double val, bool best) { if (log) log->eval(step, val); progress.eval(step, val, best); };
  hooks.on_checkpoint = [&](int64_t step, const std::string& p, double s) { progress.checkpoint(step, p, s); };
  StopOnSignal stop_on_signal;
  const auto start = std::chrono::steady_clock::now();
  const RunEnd end = run_training(t, ckpt, hooks, stop_on_signal.stop());
  progress.finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_rank_end(*t.model, dp.get(), seconds);
  if (end == RunEnd::kDiverged) {
    if (lead) fmt::print(stderr, "gpt2: error: {} non-finite steps in a row up to step {}; stopped without "
               "saving, so {} is still the last good checkpoint\n", o.max_skips(), t.steps_done(), ckpt);
    return kDivergedExitCode;
  }
  if (!lead) return 0;
#ifdef GPT2_WITH_PLOT
  const std::string plot = flags.out + "/loss.svg";
  plot_losses(read_log(log_path), plot, fmt::format("{} on {}", preset_name, t.data_dir()));
#else
  const std::string plot = "none (built without PLplot; the curve is in " + log_path + ")";
#endif
  fmt::print("done      steps {} in {}; best val loss {:.4f} at step {}; plot {}\n", t.steps_done(),
             duration(seconds), t.best_val_loss(), t.best_val_step(), plot);
  if (end == RunEnd::kStopped) {
    fmt::print("stopped   by a signal after step {}; checkpoint {} holds it. Resume with:\n"
               "          gpt2 train --out {} --resume\n", t.steps_done(), ckpt, flags.out);
    return 0;
  }
  const int64_t n = flags.sample_tokens >= 0 ? flags.sample_tokens : preset.sample_tokens;
  if (n > 0) print_closing_sample(*t.model, meta, n, o.seed(), *stop_on_signal.stop(), ckpt);
  return 0;
}

void add_train_command(CLI::App& app, int* rc) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand("train", "Train a model (nanoGPT's recipe); see the README");
  flags->model.preset = "nano";
  flags->model.preset_choices = train_preset_names();
  flags->model.preset_config = [](const std::string& name) { return train_preset(name).model; };
  flags->model.default_notes = {{"vocab_size", "the data's"}};
  flags->model.add_to(*cmd);
  cmd->add_option("--data", flags->data, "Prepared data folder (default: the shipped corpus)");
  cmd->add_option("--out", flags->out, "Folder for ckpt.pt, log.csv, loss.svg")->capture_default_str();
  CLI::Option* init_from = cmd->add_option(
      "--init-from", flags->init_from,
      "Fine-tune this model file (checkpoint .pt, Hugging Face .safetensors or folder, llm.c "
      ".bin): its config and weights, a fresh optimizer; recipe: the finetune preset unless "
      "--preset");
  init_from->check(gpt2::app::non_empty_path());
  CLI::Option* resume = cmd->add_flag("--resume", flags->resume,
                "Continue OUT/ckpt.pt (model flags must match it; training flags override its "
                "recipe)")
      ->excludes(init_from);
  cmd->add_flag("--overwrite", flags->overwrite,
                "Replace a run already in OUT (a fresh run refuses OUT/ckpt.pt otherwise)")
      ->excludes(resume);
  cmd->add_option("--sample-tokens", flags->sample_tokens, "Tokens sampled after training")
      ->check(gpt2::app::in_range(int64_t{0}, int64_t{1} << 20));
  std::vector<TrainOptions> recipes;
  for (const auto& name : train_preset_names()) recipes.push_back(train_preset(name).train);
  add_field_flags(*cmd, flag_specs(recipes), flags->train);
  add_device_flag(*cmd, flags->device);
  add_dtype_flag(*cmd, flags->dtype);
  cmd->add_option("--nproc", flags->nproc, "Data-parallel: start N local workers (torchrun's way)")
      ->check(gpt2::app::in_range(1, 1024));
  cmd->add_option("--dist-timeout", flags->dist_timeout,
                  "Data-parallel: seconds to wait for the other ranks to join and at each collective")
      ->capture_default_str();
  cmd->add_option("--inject-nan-at", flags->nan_steps, "Testing: make these steps' loss NaN")
      ->group("");
  cmd->callback([flags, rc] { *rc = run_train(*flags); });
}

}  // namespace gpt2::app
