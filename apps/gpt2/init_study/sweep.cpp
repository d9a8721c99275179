#include "apps/gpt2/init_study/sweep.h"

#include <ATen/CPUGeneratorImpl.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <tuple>

#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/init_study/sweep_plot.h"
#include "apps/gpt2/common/field_flags.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/file/output_dir.h"
#include "gpt2/model/gpt.h"

namespace gpt2::app {

InitProfile profile_at_init(const GPTConfig& config, int64_t batch, int64_t seq,
                            uint64_t data_seed) {
  GPT model(config);
  model->eval();  // no dropout: the numbers are the init's alone
  auto gen = at::make_generator<at::CPUGeneratorImpl>(data_seed);
  auto idx = torch::randint(config.vocab_size(), {batch, seq}, gen);      // (B, T)
  auto targets = torch::randint(config.vocab_size(), {batch, seq}, gen);  // (B, T)
  InitProfile p;
  p.n_layer = config.n_layer();
  p.scheme = config.init().residual();
  auto x = model->embed(idx);  // (B, T, C)
  for (int64_t i = 0; i < config.n_layer(); ++i) {
    x = model->block(i)(x);
    p.residual_std.push_back(x.std().item<double>());
  }
  auto logits = model->lm_head(model->transformer->ln_f(x));  // (B, T, V)
  p.logits_std = logits.std().item<double>();
  auto loss = torch::cross_entropy_loss(logits.view({-1, logits.size(-1)}), targets.view({-1}));
  p.loss = loss.item<double>();
  loss.backward();
  for (int64_t i = 0; i < config.n_layer(); ++i) {
    double squares = 0;
    for (const auto& param : model->block(i)->parameters()) {
      squares += param.grad().pow(2).sum().item<double>();
    }
    p.block_grad_norm.push_back(std::sqrt(squares));
  }
  return p;
}

std::vector<InitProfile> run_sweep(const SweepFlags& f, std::ostream& out) {
  make_output_dir(f.out, "study folder (--out)");  // before the sweep's minutes
  std::vector<InitProfile> profiles;
  fmt::print(out, "sweep     n_embd {}, n_head {}, vocab {}, batch {} x {} random tokens, seed {}\n",
             f.n_embd, f.n_head, f.vocab_size, f.batch, f.seq, f.seed);
  fmt::print(out, "  {:>6} {:>6} {:>14} {:>12} {:>12} {:>16} {:>16}\n", "depth", "scheme",
             "final std", "logits std", "loss", "grad norm blk 0", "grad norm last");
  for (int64_t depth : f.depths) {
    for (ResidualScale scheme : kSweepSchemes) {
      const GPTConfig config = GPTConfig()
                                   .n_layer(depth).n_embd(f.n_embd).n_head(f.n_head)
                                   .vocab_size(f.vocab_size).block_size(f.seq)
                                   .init(InitOptions().seed(f.seed).residual(scheme));
      profiles.push_back(profile_at_init(config, f.batch, f.seq, f.seed + 1));
      const InitProfile& p = profiles.back();
      fmt::print(out, "  {:>6} {:>6} {:>14.4f} {:>12.4f} {:>12.4f} {:>16.4g} {:>16.4g}\n", depth,
                 to_string(scheme), p.residual_std.back(), p.logits_std, p.loss,
                 p.block_grad_norm.front(), p.block_grad_norm.back());
    }
  }
  std::ostringstream csv;
  csv << "scheme,depth,block,residual_std,grad_norm\n";
  for (const InitProfile& p : profiles) {
    for (size_t i = 0; i < p.residual_std.size(); ++i) {
      fmt::print(csv, "{},{},{},{:.6g},{:.6g}\n", to_string(p.scheme), p.n_layer, i,
                 p.residual_std[i], p.block_grad_norm[i]);
    }
  }
  const std::string path = (std::filesystem::path(f.out) / "init_sweep.csv").string();
  write_atomically(path, [&csv](std::ostream& file) { file << csv.str(); });
  fmt::print(out, "wrote     {} (one row per scheme, depth and block)\n", path);
  const std::string width = fmt::format("n_embd {}, init on random tokens", f.n_embd);
  for (const auto& [what, name, title] :
       {std::tuple{InitQuantity::kResidualStd, "init_residual_std.svg", "Residual stream at init"},
        std::tuple{InitQuantity::kGradNorm, "init_grad_norm.svg", "Gradient norm per block at init"}}) {
    const std::string picture = (std::filesystem::path(f.out) / name).string();
    plot_init_profiles(profiles, what, picture, fmt::format("{} ({})", title, width));
    fmt::print(out, "wrote     {}\n", picture);
  }
  return profiles;
}

void add_sweep_command(CLI::App& study, int* rc) {
  auto f = std::make_shared<SweepFlags>();
  CLI::App* sweep = study.add_subcommand(
      "sweep", "Residual std, logits std and gradient norms at init, per depth and scheme");
  // Time grows with the square of the depth: 1000 took minutes per row.
  sweep->add_option("--depths", f->depths, "Depths to build (each row is printed as it is done)")
      ->delimiter(',')
      ->check(gpt2::app::in_range(int64_t{1}, kMaxSweepDepth))->capture_default_str();
  sweep->add_option("--n-embd", f->n_embd, "Width (GPT-2's is 768)")
      ->check(gpt2::app::in_range(int64_t{1}, int64_t{1 << 16}))->capture_default_str();
  sweep->add_option("--n-head", f->n_head, "Heads")
      ->check(gpt2::app::in_range(int64_t{1}, int64_t{1 << 12}))->capture_default_str();
  add_integer_flag(*sweep, "--seed", f->seed, "Seed of the init and the tokens");
  sweep->add_option("--out", f->out, "Folder for init_sweep.csv")->capture_default_str();
  sweep->callback([f, rc] {
    run_sweep(*f, std::cout);
    *rc = 0;
  });
}

}  // namespace gpt2::app
