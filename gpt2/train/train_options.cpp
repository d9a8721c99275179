#include "gpt2/train/train_options.h"

#include <fmt/format.h>

#include <utility>

#include "gpt2/error.h"
#include "gpt2/fields/table.h"

namespace gpt2 {

LrSchedule TrainOptions::schedule() const {
  return LrSchedule()
      .lr(lr_)
      .min_lr(min_lr_)
      .warmup_steps(warmup_steps_)
      .decay_steps(lr_decay_steps_ > 0 ? lr_decay_steps_ : max_steps_);
}

void TrainOptions::validate() const {
  auto positive = [](const char* name, int64_t v) {
    if (v <= 0) throw ConfigError(fmt::format("{} must be positive, got {}", name, v));
  };
  auto non_negative = [](const char* name, double v) {
    if (!(v >= 0)) throw ConfigError(fmt::format("{} must be >= 0, got {}", name, v));
  };
  positive("batch_size", batch_size_);
  positive("grad_accum", grad_accum_);
  positive("max_steps", max_steps_);
  // A bound a person can mean (10^9 steps is years at any speed here), so
  // a count typed by mistake is named instead of starting a run.
  if (max_steps_ > 1'000'000'000) {
    throw ConfigError(fmt::format("max_steps must be at most 1000000000, got {}", max_steps_));
  }
  positive("eval_interval", eval_interval_);
  positive("eval_steps", eval_steps_);
  positive("max_skips", max_skips_);
  non_negative("warmup_steps", static_cast<double>(warmup_steps_));
  non_negative("lr_decay_steps", static_cast<double>(lr_decay_steps_));
  non_negative("checkpoint_interval", static_cast<double>(checkpoint_interval_));
  non_negative("weight_decay", weight_decay_);
  non_negative("grad_clip", grad_clip_);
  if (!(lr_ > 0) || !(min_lr_ >= 0) || min_lr_ > lr_) {
    throw ConfigError(fmt::format("learning rates need 0 <= min_lr <= lr and lr > 0, got lr {} "
                                  "and min_lr {}", lr_, min_lr_));
  }
  for (auto [name, beta] : {std::pair{"beta1", beta1_}, std::pair{"beta2", beta2_}}) {
    if (!(beta >= 0 && beta < 1)) {
      throw ConfigError(fmt::format("{} must be in [0, 1), got {}", name, beta));
    }
  }
}

std::string to_string(const TrainOptions& o) { return fields_to_string(o); }

}  // namespace gpt2
