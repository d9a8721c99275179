#include "apps/gpt2/common/progress.h"

#include <fmt/format.h>

#include <cmath>

namespace gpt2::app {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto total = static_cast<int64_t>(std::lround(s));
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, total % 3600 / 60);
  if (total >= 60) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

Progress::Progress(std::FILE* out, bool live, int64_t max_steps, int64_t first_step, int64_t every)
    : out_(out), live_(live), max_steps_(max_steps), first_step_(first_step),
      every_(every > 0 ? every : 1) {}

void Progress::line(const std::string& text) {
  fmt::print(out_, "{}{}\n", live_shown_ ? "\r\x1b[K" : "", text);
  live_shown_ = false;
  std::fflush(out_);
}

void Progress::step(const StepResult& r) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double per_step = elapsed / static_cast<double>(r.step - first_step_);
  const std::string text = fmt::format(
      "step {:>{}}/{} | loss {:.4f} | lr {:.2e} | norm {:.2f} | {:.0f} tok/s | ETA {}", r.step,
      std::to_string(max_steps_).size(), max_steps_, r.loss, r.lr, r.grad_norm,
      static_cast<double>(r.tokens) / r.seconds,
      format_duration(per_step * static_cast<double>(max_steps_ - r.step)));
  if (r.skipped) {
    line(fmt::format("skipped   step {}: non-finite loss {} or grad norm {}; weights unchanged",
                     r.step, r.loss, r.grad_norm));
  } else if (live_) {
    fmt::print(out_, "\r{}\x1b[K", text);
    live_shown_ = true;
    std::fflush(out_);
  } else if (r.step % every_ == 0 || r.step == first_step_ + 1 || r.step == max_steps_) {
    line(text);
  }
}

void Progress::eval(int64_t step, double val_loss, bool best) {
  line(fmt::format("eval      step {}: val loss {:.4f}{}", step, val_loss, best ? " (best)" : ""));
}

void Progress::checkpoint(int64_t step, const std::string& path, double seconds) {
  line(fmt::format("saved     {} at step {} ({:.2f} s)", path, step, seconds));
}

void Progress::finish() {
  if (live_shown_) fmt::print(out_, "\n");
  live_shown_ = false;
  std::fflush(out_);
}

}  // namespace gpt2::app
