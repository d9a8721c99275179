// `init-study frontier`'s flags: a profile gives every setting, and each
// flag given replaces the profile's value.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <functional>
#include <iostream>
#include <memory>

#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/common/model_flags.h"
#include "apps/gpt2/init_study/frontier.h"

namespace gpt2::app {
namespace {

// The flags given, each applied over the profile by one function.
struct FrontierFlags {
  std::string profile = "full";
  std::vector<std::string> schemes;
  std::string clip, device = "cpu", dtype = "float32";
  std::vector<std::function<void(FrontierGrid&)>> apply;
};

// Registers `--name` for the grid's `member`, shown with the full profile's
// value, applied only when given.
template <class T>
void add_setting(CLI::App* cmd, const std::shared_ptr<FrontierFlags>& flags, const char* name,
                 T FrontierGrid::*member, const std::string& shown, const char* help) {
  auto value = std::make_shared<T>();
  CLI::Option* option = cmd->add_option(name, *value, help)->default_str(shown);
  if constexpr (!std::is_arithmetic_v<T> && !std::is_same_v<T, std::string>) {
    option->delimiter(',');
  }
  if constexpr (std::is_same_v<T, std::vector<uint64_t>>) option->check(gpt2::app::not_negative());
  flags->apply.push_back([option, value, member](FrontierGrid& g) {
    if (option->count() > 0) g.*member = *value;
  });
}

}  // namespace

void add_frontier_command(CLI::App& study, int* rc) {
  auto f = std::make_shared<FrontierFlags>();
  const FrontierGrid full = frontier_profile("full");
  CLI::App* cmd = study.add_subcommand(
      "frontier", "Final val loss against learning rate, per residual scheme, depth and seed");
  cmd->footer(
      "Trains char-level models on the shipped corpus with the nano recipe's schedule "
      "(warm-up, cosine to lr/10, AdamW 0.9/0.95; clip 1.0 unless --clip). Each finished run "
      "is a row of OUT/frontier.csv; a second invocation with the same --out runs only the "
      "missing cells (grid flags may select other cells; the other settings, --clip, the "
      "device's kind and --dtype among them, must be those recorded in OUT/frontier_grid.txt). "
      "Writes OUT/frontier_table.txt, OUT/frontier_loss.svg and OUT/frontier_lr.svg from every "
      "row. The defaults shown are the full profile's; each flag given replaces its profile's "
      "value. docs/init.md and docs/init-gpu.md size the full and the gpt2-gpu grids.");
  cmd->add_option("--profile", f->profile, "Settings to start from: full (the CPU grid "
                  "docs/init.md reports), smoke (seconds, for tests) or gpt2-gpu (GPT-2's width "
                  "at 12, 24 and 48 blocks, cuda, bfloat16, no clipping)")
      ->check(CLI::IsMember(frontier_profile_names()))->capture_default_str();
  cmd->add_option("--schemes", f->schemes, "Residual schemes: 2n, n, none, zero")
      ->delimiter(',')->default_str("2n,n,none,zero");
  const auto list = [](const auto& v) { return fmt::format("{}", fmt::join(v, ",")); };
  add_setting(cmd, f, "--depths", &FrontierGrid::depths, list(full.depths), "Blocks");
  add_setting(cmd, f, "--lrs", &FrontierGrid::lrs, list(full.lrs), "Peak learning rates");
  add_setting(cmd, f, "--seeds", &FrontierGrid::seeds, list(full.seeds),
              "Seeds of the init, the batches and the val batches");
  const auto one = [](int64_t v) { return std::to_string(v); };
  add_setting(cmd, f, "--n-embd", &FrontierGrid::n_embd, one(full.n_embd), "Width");
  add_setting(cmd, f, "--n-head", &FrontierGrid::n_head, one(full.n_head),
              "Heads; must divide --n-embd");
  add_setting(cmd, f, "--block-size", &FrontierGrid::block_size, one(full.block_size),
              "Tokens per sequence");
  add_setting(cmd, f, "--batch-size", &FrontierGrid::batch_size, one(full.batch_size),
              "Sequences per step");
  add_setting(cmd, f, "--steps", &FrontierGrid::steps, one(full.steps), "Optimizer steps per run");
  add_setting(cmd, f, "--warmup-steps", &FrontierGrid::warmup_steps, one(full.warmup_steps),
              "Linear warm-up steps");
  add_setting(cmd, f, "--eval-interval", &FrontierGrid::eval_interval, one(full.eval_interval),
              "Steps between val evaluations");
  add_setting(cmd, f, "--eval-steps", &FrontierGrid::eval_steps, one(full.eval_steps),
              "Val batches per evaluation");
  cmd->add_option("--clip", f->clip, "Gradient-norm clip: a norm, or off (also 0) for none")
      ->default_str("1 (gpt2-gpu: off)");
  add_device_flag(*cmd, f->device)->default_str("cpu (gpt2-gpu: cuda)");
  add_dtype_flag(*cmd, f->dtype)->default_str("float32 (gpt2-gpu: bfloat16)");
  add_setting(cmd, f, "--time-limit", &FrontierGrid::time_limit, "0",
              "Seconds: start no run expected to end past them (0: no limit); the same command "
              "runs the rest");
  auto* probe = cmd->add_flag("--cost-probe", "Run each depth's first cell, then print and write "
                              "OUT/frontier_cost.txt: seconds per run and what the grid takes");
  auto* report = cmd->add_flag("--report", "Run nothing: the table and pictures from the CSV "
                               "(on any machine)");
  probe->excludes(report);
  add_setting(cmd, f, "--data", &FrontierGrid::data, "",
              "Prepared char-level data (default: the shipped corpus, prepared into OUT/data-char)");
  add_setting(cmd, f, "--out", &FrontierGrid::out, ".",
              "Folder for the CSV, its settings, the table, the pictures and the data");
  cmd->callback([f, rc, cmd, probe, report] {
    FrontierGrid grid = frontier_profile(f->profile);
    for (const auto& apply : f->apply) apply(grid);
    if (cmd->count("--clip") > 0) grid.clip = clip_from_flag(f->clip);
    if (cmd->count("--device") > 0) grid.device = f->device;
    if (cmd->count("--dtype") > 0) grid.dtype = f->dtype;
    grid.cost_probe = probe->count() > 0;
    grid.report_only = report->count() > 0;
    if (!f->schemes.empty()) {
      grid.schemes.clear();
      for (const std::string& s : f->schemes) grid.schemes.push_back(residual_scale_from_string(s));
    }
    run_frontier(grid, std::cout);
    *rc = 0;
  });
}

}  // namespace gpt2::app
