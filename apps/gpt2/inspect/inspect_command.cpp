#include "apps/gpt2/inspect/inspect_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "gpt2/io/checkpoint.h"
#include "gpt2/io/nanogpt.h"
#include "gpt2/io/state_dict.h"
#include "gpt2/model/gpt.h"
#include "gpt2/runtime/runtime.h"

namespace gpt2::app {
namespace {

std::string thousands(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// The init checks of a model built here: the audit of its tensors, by name,
// against the rule its own config states (the library's init decides by
// the residual flag; the audit is the independent oracle).
bool print_init_checks(const GPTImpl& model, std::ostream& out) {
  const GPTConfig& c = model.config;
  const std::string residual = c.init().residual() == ResidualScale::kZero
                                   ? "projections start at 0"
                                   : fmt::format("N = {}", c.residual_count());
  fmt::print(out, "init      scheme {} ({}), std {}, wpe std {}, seed {}\n",
             to_string(c.init().residual()), residual, c.init().std(), c.init().wpe_std(),
             c.init().seed() ? std::to_string(*c.init().seed()) : "none");
  const InitAudit audit = audit_init(model, InitAuditOptions()
                                                .scheme(c.init().residual())
                                                .std(c.init().std())
                                                .wpe_std(c.init().wpe_std()));
  print_family_table(audit, out);
  for (const auto& finding : audit.findings) fmt::print(out, "finding   {}\n", finding);
  return audit.ok();
}

bool print_tie(const GPTImpl& model, std::ostream& out) {
  const void* head = model.lm_head->weight.data_ptr();
  const void* wte = model.transformer->wte->weight.data_ptr();
  const bool tied = head == wte && model.lm_head->weight.is_same(model.transformer->wte->weight);
  fmt::print(out, "tie       lm_head.weight         data_ptr {}\n", head);
  fmt::print(out, "          transformer.wte.weight data_ptr {}  {}\n", wte,
             tied ? "same tensor: ok" : "DIFFERENT: FAIL");
  return tied;
}

}  // namespace

int report(const GPTImpl& model, std::ostream& out) {
  fmt::print(out, "config    {}\n", to_string(model.config));
  const int64_t unique = model.num_parameters();
  const int64_t tied = model.lm_head->weight.numel();
  fmt::print(out, "params    {} unique ({} non-embedding); {} if the tie were broken\n",
             thousands(unique), thousands(model.num_parameters(true)), thousands(unique + tied));
  const RuntimeInfo rt = runtime_info();
  fmt::print(out, "runtime   {}; {}\n", runtime_line(rt), rt.blas_library);
  const bool init_ok = print_init_checks(model, out);
  const bool tie_ok = print_tie(model, out);
  const bool ok = init_ok && tie_ok;
  fmt::print(out, "result    {}\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

int run_inspect(const InspectFlags& flags, std::ostream& out) {
  if (!flags.audit.file.empty()) return run_audit(flags.audit, out);
  if (!flags.checkpoint.empty()) {
    GPT model{nullptr};
    std::vector<std::string> notes;
    if (detect_model_format(flags.checkpoint) == ModelFormat::kNanoGPT) {
      NanoGPTCheckpoint c = load_nanogpt(flags.checkpoint);
      fmt::print(out, "loaded    {} (nanoGPT's ckpt.pt, iter_num {}, best val loss {:.4f})\n",
                 flags.checkpoint, c.run.iter_num, c.run.best_val_loss);
      model = c.model, notes = c.notes;
    } else {
      const Checkpoint c = load_checkpoint(flags.checkpoint);
      fmt::print(out, "loaded    {} (trained {} steps)\n", flags.checkpoint, c.step);
      model = c.model, notes = c.notes;
    }
    for (const auto& note : notes) fmt::print(out, "note      {}\n", note);
    const bool tied = print_tie(*model, out);
    const auto nonfinite = nonfinite_report(*model);
    if (nonfinite.empty()) {
      fmt::print(out, "values    every weight finite: ok\n");
    } else {
      for (const auto& line : nonfinite) fmt::print(out, "values    {}: FAIL\n", line);
    }
    fmt::print(out, "fresh     the init checks below run on a new model of the checkpoint's config\n");
    const int rc = report(*GPT(model->config), out);
    return tied && nonfinite.empty() ? rc : 1;
  }
  const torch::Device device = device_from_flag(flags.device);
  const GPTConfig config = flags.model.config();
  const auto start = std::chrono::steady_clock::now();
  GPT model(config);
  const double build_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(out, "build     {:.2f} s to construct and initialize\n", build_s);
  if (!device.is_cpu()) {
    model->to(device);
    fmt::print(out, "device    {}: the checks below read the model there; its attention and "
                    "products are torch's CUDA kernels\n", device.str());
  }
  if (!flags.save_path.empty()) {
    save_checkpoint(flags.save_path, *model);
    fmt::print(out, "saved     {} (checkpoint; Python: torch.jit.load(path).state_dict())\n",
               flags.save_path);
  }
  return report(*model, out);
}

void add_inspect_command(CLI::App& app, int* rc) {
  auto flags = std::make_shared<InspectFlags>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Build a model; print config, parameter counts, BLAS, init table and tie check");
  const auto model_options = flags->model.add_to(*cmd);
  CLI::Option* save = cmd->add_option(
      "--save", flags->save_path, "Write the model as a checkpoint to this path (replaced atomically)");
  CLI::Option* checkpoint = cmd->add_option(
      "--checkpoint", flags->checkpoint,
      "Inspect this checkpoint: its tie, and the init checks on a fresh model of its config");
  checkpoint->check(CLI::ExistingPath)->excludes(save);
  CLI::Option* device = add_device_flag(*cmd, flags->device)->excludes(checkpoint);
  for (CLI::Option* option : model_options) checkpoint->excludes(option);
  CLI::Option* audit = cmd->add_option(
      "--audit-init", flags->audit.file,
      "Audit this model file (any format) against GPT-2's init and tie: exit 0 follows, 1 "
      "departs, 3 trained (init not judged), 2 unreadable");
  audit->check(CLI::ExistingPath)->excludes(save)->excludes(checkpoint)->excludes(device);
  for (CLI::Option* option : model_options) audit->excludes(option);
  cmd->add_option("--scheme", flags->audit.scheme, "The scheme --audit-init holds the file to")
      ->check(CLI::IsMember({"2n", "n", "none", "zero"}))
      ->capture_default_str()
      ->needs(audit);
  cmd->add_option("--audit-plot", flags->audit.plot,
                  "The depth profile's SVG (default NAME-init-audit.svg here; none: no picture)")
      ->needs(audit);
  cmd->callback([flags, rc] { *rc = run_inspect(*flags, std::cout); });
}

}  // namespace gpt2::app
