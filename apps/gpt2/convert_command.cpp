#include "apps/gpt2/convert_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <iostream>
#include <memory>

#include "gpt2/file/atomic_file.h"
#include "gpt2/io/model_source.h"

namespace gpt2::app {

int run_convert(const ConvertFlags& flags, std::ostream& out) {
  // A checkpoint converted onto itself would lose its optimizer and
  // training state; a folder's weights onto themselves, the folder.
  refuse_writing_over_inputs(flags.out, {{flags.in, "the model converted"}});
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
      "convert", "Convert a model between gpt2 checkpoints (.pt), Hugging Face safetensors "
                 "(.safetensors or a folder) and llm.c files (.bin)");
  cmd->add_option("IN", flags->in, "Model to read")->required();
  cmd->add_option("OUT", flags->out, "Where to write it")->required();
  const std::vector<std::string> formats = {"checkpoint", "safetensors", "llmc"};
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
