// `init-study frontier`'s flags: a profile gives every setting, and each
// flag given replaces the profile's value.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <functional>
#include <iostream>
#include <memory>

#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/init_study/frontier.h"

namespace gpt2::app {
namespace {

// The flags given, each applied over the profile by one function.
struct FrontierFlags {
  std::string profile = "full";
  std::vector<std::string> schemes;
  std::vector<std::function<void(FrontierGrid&)>> apply;
};

// Registers `--name` for the grid's `member`, shown with the full profile's
// value, applied only when given.
template <class T>
void add_setting(CLI::App* cmd, const std::shared_ptr<FrontierFlags>& flags, const char* name,
                 T FrontierGrid::*member, const std::string& shown, const char* help) {
  auto value = std::make_shared<T>();
  CLI::Option* option = cmd->add_option(name, *value, help)->default_str(shown);
  if constexpr (!std::is_same_v<T, int64_t> && !std::is_same_v<T, std::string>) {
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
      "Trains small char-level models on the shipped corpus with the nano recipe's schedule "
      "(warm-up, cosine to lr/10, clip 1.0, AdamW 0.9/0.95). Each finished run is a row of "
      "OUT/frontier.csv; a second invocation with the same --out runs only the missing cells "
      "(grid flags may select other cells; the other settings must be those recorded in "
      "OUT/frontier_grid.txt). Writes OUT/frontier_table.txt, OUT/frontier_loss.svg and "
      "OUT/frontier_lr.svg from every row. docs/init.md sizes the full grid.");
  cmd->add_option("--profile", f->profile, "Settings to start from: full (the grid docs/init.md "
                                           "reports) or smoke (seconds, for tests)")
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
  add_setting(cmd, f, "--data", &FrontierGrid::data, "",
              "Prepared char-level data (default: the shipped corpus, prepared into OUT/data-char)");
  add_setting(cmd, f, "--out", &FrontierGrid::out, ".",
              "Folder for the CSV, its settings, the table, the pictures and the data");
  cmd->callback([f, rc] {
    FrontierGrid grid = frontier_profile(f->profile);
    for (const auto& apply : f->apply) apply(grid);
    if (!f->schemes.empty()) {
      grid.schemes.clear();
      for (const std::string& s : f->schemes) grid.schemes.push_back(residual_scale_from_string(s));
    }
    run_frontier(grid, std::cout);
    *rc = 0;
  });
}

}  // namespace gpt2::app
