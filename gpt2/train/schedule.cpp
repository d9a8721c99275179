#include "gpt2/train/train_options.h"

#include <cmath>

namespace gpt2 {

double LrSchedule::at(int64_t it) const {
  if (it < warmup_steps_) {
    return lr_ * static_cast<double>(it + 1) / static_cast<double>(warmup_steps_ + 1);
  }
  if (it > decay_steps_ || decay_steps_ <= warmup_steps_) return min_lr_;
  const double ratio = static_cast<double>(it - warmup_steps_) /
                       static_cast<double>(decay_steps_ - warmup_steps_);
  const double coeff = 0.5 * (1.0 + std::cos(M_PI * ratio));  // 1 -> 0
  return min_lr_ + coeff * (lr_ - min_lr_);
}

}  // namespace gpt2
