#include "gpt2/train/train_options.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <type_traits>

#include "gpt2/error.h"

namespace gpt2 {
namespace {

std::string text_of(int64_t v) { return std::to_string(v); }
std::string text_of(uint64_t v) { return std::to_string(v); }
// Shortest text that reads back to the same double.
std::string text_of(double v) { return fmt::format("{}", v); }

template <class T>
bool parse(const std::string& text, T& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  if constexpr (std::is_same_v<T, double>) {
    out = std::strtod(text.c_str(), &end);
    return errno == 0 && *end == '\0' && std::isfinite(out);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    if (text[0] == '-') return false;
    out = std::strtoull(text.c_str(), &end, 10);
  } else {
    out = std::strtoll(text.c_str(), &end, 10);
  }
  return errno == 0 && *end == '\0';
}

const char* form_of(int64_t) { return "an integer"; }
const char* form_of(uint64_t) { return "an integer in [0, 2^64)"; }
const char* form_of(double) { return "a finite number"; }

}  // namespace

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

std::vector<std::pair<TrainField, std::string>> train_field_texts(const TrainOptions& o) {
  std::vector<std::pair<TrainField, std::string>> out;
  for_each_train_field(o, [&out](const TrainField& f, const auto& v) {
    out.emplace_back(f, text_of(v));
  });
  return out;
}

void set_train_field(TrainOptions& o, const std::string& key, const std::string& text,
                     const std::string& shown_as) {
  bool found = false;
  for_each_train_field(o, [&](const TrainField& f, auto& v) {
    if (key != f.key) return;
    found = true;
    std::remove_reference_t<decltype(v)> parsed{};
    if (!parse(text, parsed)) {
      throw ConfigError(fmt::format("{} must be {}, got '{}'", shown_as, form_of(parsed), text));
    }
    v = parsed;
  });
  if (!found) throw ConfigError(fmt::format("{}: no training option is called '{}'", shown_as, key));
}

std::string to_string(const TrainOptions& o) {
  std::string out = "TrainOptions(";
  for (const auto& [field, text] : train_field_texts(o)) {
    out += fmt::format("{}{}={}", out.back() == '(' ? "" : ", ", field.key, text);
  }
  return out + ")";
}

}  // namespace gpt2
