#include "apps/gpt2/convert_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "gpt2/fields/table.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/io/model_source.h"
#include "gpt2/io/nanogpt.h"
#include "gpt2/train/nanogpt_run.h"
#include "gpt2/train/optim.h"
#include "gpt2/train/trainer.h"

namespace gpt2::app {
namespace {

// A `gpt2 train` checkpoint with its optimizer, as nanoGPT's ckpt.pt: the
// AdamW state, the step as iter_num, best val and the recipe as config.
// False (nothing written) for a checkpoint without that training state.
bool convert_run_to_nanogpt(const std::string& in, const std::string& to, std::ostream& out) {
  const Checkpoint c = load_checkpoint(in);
  if (!c.has_optimizer_state || c.train_options.empty()) return false;
  TrainOptions options;
  load_fields(options, c.train_options);
  const TrainRecord record = parse_train_record(c, in);
  auto opt = configure_optimizers(*c.model, torch::optim::AdamWOptions(options.lr())
                                                .betas({options.beta1(), options.beta2()})
                                                .weight_decay(options.weight_decay()));
  load_optimizer_state(in, *opt);
  NanoGPTRun run{c.step, record.best_val_step >= 0 ? record.best_val_loss : 1e9,
                 nanogpt_config(options, c.model->config,
                                std::filesystem::path(record.data_dir).filename().string())};
  for (const auto& note : save_nanogpt(to, *c.model, run, opt.get())) {
    fmt::print(out, "note      {}\n", note);
  }
  fmt::print(out, "read      {} (checkpoint, step {}, with optimizer state)\n", in, c.step);
  fmt::print(out, "wrote     {} (nanogpt, iter_num {}, AdamW state in nanoGPT's two groups)\n", to,
             c.step);
  fmt::print(out, "model     {}\n", to_string(c.model->config));
  return true;
}

// What a nanoGPT ckpt.pt holds beside the weights, for the note of a
// conversion to a format that keeps weights only.
std::string nanogpt_run_held(const NanoGPTCheckpoint& c) {
  return fmt::format("iter_num {}, best_val_loss {:.4g}, the AdamW state, train.py's config ({} "
                     "entries)", c.run.iter_num, c.run.best_val_loss, c.run.config.size());
}

// nanoGPT's ckpt.pt onward. To nanoGPT: the whole run (iter_num, best loss,
// config, the AdamW state and its groups' settings). Elsewhere: the
// weights, and a note naming what the target does not hold.
void convert_from_nanogpt(const ConvertFlags& flags, bool to_nanogpt, std::ostream& out) {
  NanoGPTCheckpoint c = load_nanogpt(flags.in, NanoGPTReadOptions().optimizer(to_nanogpt));
  for (const auto& note : c.notes) fmt::print(out, "note      {}\n", note);
  if (to_nanogpt) {
    // The groups' lr, betas, eps and weight decay come from the file.
    auto opt = configure_optimizers(*c.model, torch::optim::AdamWOptions());
    if (c.optimizer) restore_nanogpt_optimizer(*c.optimizer, *c.model, *opt, flags.in);
    for (const auto& note : save_nanogpt(flags.out, *c.model, c.run, opt.get())) {
      fmt::print(out, "note      {}\n", note);
    }
    fmt::print(out, "read      {} (nanogpt, iter_num {})\n", flags.in, c.run.iter_num);
    fmt::print(out, "wrote     {} (nanogpt, iter_num {}, AdamW state of {} parameters, "
               "best_val_loss {:.4g}, config of {} entries)\n", flags.out, c.run.iter_num,
               c.optimizer ? c.optimizer->state.size() : 0, c.run.best_val_loss,
               c.run.config.size());
  } else {
    ModelSaveOptions save;
    if (!flags.to.empty()) save.format(model_format_from_string(flags.to));
    save.llmc_dtype(flags.bf16 ? LlmcDtype::kBFloat16 : LlmcDtype::kFloat32);
    const ModelFormat written = save_model(flags.out, *c.model, save);
    fmt::print(out, "note      not carried into {}: {} (`gpt2 train --resume` continues the run "
               "from the nanoGPT file; `--to nanogpt` keeps it all)\n", to_string(written),
               nanogpt_run_held(c));
    fmt::print(out, "read      {} (nanogpt)\n", flags.in);
    fmt::print(out, "wrote     {} ({}{})\n", flags.out, to_string(written),
               written == ModelFormat::kLlmc ? ", " + to_string(save.llmc_dtype()) : "");
  }
  fmt::print(out, "model     {}\n", to_string(c.model->config));
}

}  // namespace

int run_convert(const ConvertFlags& flags, std::ostream& out) {
  // A checkpoint converted onto itself would lose its optimizer and
  // training state; a folder's weights onto themselves, the folder.
  refuse_writing_over_inputs(flags.out, {{flags.in, "the model converted"}});
  const bool to_nanogpt = flags.to == to_string(ModelFormat::kNanoGPT);
  const ModelFormat from = flags.from.empty() ? detect_model_format(flags.in)
                                              : model_format_from_string(flags.from);
  if (to_nanogpt && from == ModelFormat::kCheckpoint &&
      convert_run_to_nanogpt(flags.in, flags.out, out)) {
    return 0;
  }
  if (from == ModelFormat::kNanoGPT) {
    convert_from_nanogpt(flags, to_nanogpt, out);
    return 0;
  }
  ModelSourceOptions source;
  source.n_head(flags.n_head);
  if (!flags.from.empty()) source.format(model_format_from_string(flags.from));
  LoadedModel loaded = load_model_file(flags.in, source);
  for (const auto& note : loaded.notes) fmt::print(out, "note      {}\n", note);

  ModelSaveOptions save;
  if (!flags.to.empty()) save.format(model_format_from_string(flags.to));
  save.llmc_dtype(flags.bf16 ? LlmcDtype::kBFloat16 : LlmcDtype::kFloat32);
  const ModelFormat written = save_model(flags.out, *loaded.model, save);
  fmt::print(out, "read      {} ({})\n", flags.in, to_string(loaded.format));
  fmt::print(out, "wrote     {} ({}{})\n", flags.out, to_string(written),
             written == ModelFormat::kLlmc ? ", " + to_string(save.llmc_dtype()) : "");
  fmt::print(out, "model     {}\n", to_string(loaded.model->config));
  return 0;
}

void add_convert_command(CLI::App& app, int* rc) {
  auto flags = std::make_shared<ConvertFlags>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Convert a model between gpt2 checkpoints (.pt), nanoGPT's ckpt.pt, Hugging "
                 "Face safetensors (.safetensors or a folder) and llm.c files (.bin)");
  cmd->add_option("IN", flags->in, "Model to read")->required();
  cmd->add_option("OUT", flags->out, "Where to write it")->required();
  std::vector<std::string> formats;
  for (const auto& [format, name] : names<ModelFormat>()) formats.push_back(name);
  cmd->add_option("--from", flags->from, "Format of IN (default: told by its name)")
      ->check(CLI::IsMember(formats));
  cmd->add_option("--to", flags->to, "Format of OUT (default: told by its name)")
      ->check(CLI::IsMember(formats));
  cmd->add_option("--n-head", flags->n_head,
                  "Attention heads, for a safetensors file without config.json");
  cmd->add_flag("--bf16", flags->bf16, "Write llm.c's bfloat16 version (5) instead of float32 (3)");
  cmd->callback([flags, rc] { *rc = run_convert(*flags, std::cout); });
}

}  // namespace gpt2::app
