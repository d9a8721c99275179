#include "apps/gpt2/init_study/frontier_grid.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>

#include "apps/gpt2/common/model_flags.h"
#include "apps/gpt2/init_study/frontier_run.h"
#include "gpt2/error.h"

namespace gpt2::app {
namespace {

void require_positive(int64_t value, const char* flag) {
  if (value <= 0) throw ConfigError(fmt::format("{} must be positive, got {}", flag, value));
}

template <class T>
void require_some(const std::vector<T>& values, const char* flag) {
  if (values.empty()) throw ConfigError(fmt::format("{} names no value", flag));
}

// A profile's model shape and run length.
struct Shape {
  int64_t n_embd, n_head, block_size, batch_size, steps, warmup_steps, eval_interval, eval_steps;
};

void set_shape(FrontierGrid& g, const Shape& s) {
  g.n_embd = s.n_embd;
  g.n_head = s.n_head;
  g.block_size = s.block_size;
  g.batch_size = s.batch_size;
  g.steps = s.steps;
  g.warmup_steps = s.warmup_steps;
  g.eval_interval = s.eval_interval;
  g.eval_steps = s.eval_steps;
}

void require_clip(double clip, const std::string& text) {
  if (!(clip >= 0) || !std::isfinite(clip)) {
    throw ConfigError(fmt::format(
        "--clip must be off, 0 or a positive, finite gradient norm, got {}", text));
  }
}

}  // namespace

std::vector<std::string> frontier_profile_names() { return {"full", "smoke", "gpt2-gpu"}; }

FrontierGrid frontier_profile(const std::string& name) {
  FrontierGrid g;
  g.schemes.assign(std::begin(kStudySchemes), std::end(kStudySchemes));
  if (name == "full") {
    // Sized in docs/init.md ("Cost"): 336 runs, a few hours on 2 cores.
    g.depths = {4, 8, 16, 32};
    g.lrs = {1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1};
    g.seeds = {1, 2, 3};
    //          n_embd, n_head, block, batch, steps, warm-up, eval every, eval batches
    set_shape(g, {64, 4, 64, 16, 250, 25, 50, 8});
  } else if (name == "smoke") {
    // For the test suite: 24 runs in seconds, every part of the command.
    g.depths = {2, 4};
    g.lrs = {1e-3, 1e-2, 1e-1};
    g.seeds = {1};
    set_shape(g, {32, 2, 32, 8, 24, 4, 12, 2});
  } else if (name == "gpt2-gpu") {
    // GPT-2's width, heads and depths (gpt2, gpt2-medium's and gpt2-xl's
    // n_layer) without clipping, in 168 runs; docs/init-gpu.md
    // sizes it and says why these rates.
    g.depths = {12, 24, 48};
    g.lrs = {3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1};
    g.seeds = {1, 2};
    set_shape(g, {768, 12, 256, 16, 120, 12, 40, 4});
    g.clip = 0;
    g.device = "cuda";
    g.dtype = "bfloat16";
  } else {
    throw ConfigError(fmt::format("unknown frontier profile '{}'; known: {}", name,
                                  fmt::join(frontier_profile_names(), ", ")));
  }
  return g;
}

double clip_from_flag(const std::string& text) {
  if (text == "off") return 0;
  char* end = nullptr;
  const double clip = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') {
    throw ConfigError(fmt::format("--clip: '{}' is not a gradient norm or off", text));
  }
  require_clip(clip, text);
  return clip;
}

void validate(const FrontierGrid& g) {
  require_some(g.schemes, "--schemes");
  require_some(g.depths, "--depths");
  require_some(g.lrs, "--lrs");
  require_some(g.seeds, "--seeds");
  for (int64_t d : g.depths) require_positive(d, "--depths");
  for (double lr : g.lrs) {
    if (!(lr > 0) || !std::isfinite(lr)) {
      throw ConfigError(fmt::format("--lrs must be positive, finite learning rates, got {}", lr));
    }
  }
  require_positive(g.n_embd, "--n-embd");
  require_positive(g.n_head, "--n-head");
  require_positive(g.block_size, "--block-size");
  require_positive(g.batch_size, "--batch-size");
  require_positive(g.steps, "--steps");
  // A bound a person can mean: a million steps of the smallest model is a
  // day per run here, and the grid has hundreds.
  if (g.steps > 1'000'000) {
    throw ConfigError(fmt::format("--steps must be at most 1000000 per run, got {}", g.steps));
  }
  require_positive(g.eval_interval, "--eval-interval");
  require_positive(g.eval_steps, "--eval-steps");
  if (g.warmup_steps < 0 || g.warmup_steps > g.steps) {
    throw ConfigError(fmt::format("--warmup-steps must be in [0, --steps {}], got {}", g.steps,
                                  g.warmup_steps));
  }
  require_clip(g.clip, fmt::format("{}", g.clip));
  dtype_from_flag(g.dtype);
  if (!(g.time_limit >= 0) || !std::isfinite(g.time_limit)) {
    throw ConfigError(fmt::format("--time-limit must be a finite number of seconds at least 0 "
                                  "(0: none), got {}", g.time_limit));
  }
  if (g.cost_probe && g.report_only) {
    throw ConfigError("--cost-probe runs cells and --report runs none: give one of them");
  }
  // The shape's and the recipe's own rules, with a stand-in vocabulary: the
  // data's is only known once it is prepared.
  for (const FrontierCell& c : frontier_cells(g)) {
    frontier_model(g, 65, c).validate();
    frontier_options(g, c).validate();
  }
}

std::vector<FrontierCell> frontier_cells(const FrontierGrid& g) {
  std::vector<FrontierCell> cells;
  for (uint64_t seed : g.seeds) {
    for (int64_t depth : g.depths) {
      for (double lr : g.lrs) {
        for (ResidualScale scheme : g.schemes) {
          const FrontierCell c{scheme, depth, lr, seed};
          if (std::find(cells.begin(), cells.end(), c) == cells.end()) cells.push_back(c);
        }
      }
    }
  }
  return cells;
}

}  // namespace gpt2::app
