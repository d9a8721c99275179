#include "apps/gpt2/export_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "apps/gpt2/common/cli_main.h"
#include "gpt2/error.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/io/checkpoint.h"

namespace gpt2::app {

int run_export(const ExportFlags& flags, std::ostream& out) {
  refuse_writing_over_inputs(flags.out, {{flags.checkpoint, "--checkpoint"}});
  GPT model = model_from(flags.checkpoint, flags.model, out);
  model->eval();
  export_torchscript(*model, flags.out);
  fmt::print(out, "exported  {} ({} bytes) from {}\n", flags.out,
             std::filesystem::file_size(flags.out),
             flags.checkpoint.empty() ? to_string(model->config) : flags.checkpoint);
  fmt::print(out, "run it    C++: torch::jit::load(path).forward({{idx}})   "
                  "Python: torch.jit.load(path)(idx)   idx (B, T) int64, T <= {}\n",
             model->config.block_size());
  return 0;
}

void add_export_command(CLI::App& app, int* rc) {
  auto flags = std::make_shared<ExportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a model as a TorchScript program (forward(idx) -> logits)");
  const auto model_options = flags->model.add_to(*cmd);
  CLI::Option* checkpoint = cmd->add_option(
      "--checkpoint,--model", flags->checkpoint,
      "Export this model file (gpt2 checkpoint, safetensors file or folder, llm.c .bin) "
      "instead of a fresh model");
  checkpoint->check(gpt2::app::non_empty_path());
  for (CLI::Option* option : model_options) checkpoint->excludes(option);
  cmd->add_option("--out", flags->out, "Path of the TorchScript file to write")->required();
  cmd->callback([flags, rc] { *rc = run_export(*flags, std::cout); });
}

}  // namespace gpt2::app
