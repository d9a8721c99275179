#include "gpt2/train/nanogpt_run.h"

#include <fmt/format.h>

#include <variant>

#include "gpt2/error.h"

namespace gpt2 {
namespace {

// nanoGPT's key, the TrainOptions field it sets, and whether it is an int.
struct Key {
  const char* nanogpt;
  const char* field;
  bool integer;
};
constexpr Key kKeys[] = {
    {"learning_rate", "lr", false},
    {"min_lr", "min_lr", false},
    {"warmup_iters", "warmup_steps", true},
    {"lr_decay_iters", "lr_decay_steps", true},
    {"max_iters", "max_steps", true},
    {"weight_decay", "weight_decay", false},
    {"beta1", "beta1", false},
    {"beta2", "beta2", false},
    {"grad_clip", "grad_clip", false},
    {"batch_size", "batch_size", true},
    {"gradient_accumulation_steps", "grad_accum", true},
    {"eval_interval", "eval_interval", true},
    {"eval_iters", "eval_steps", true},
};

const StoredValue* find(const StoredFields& config, const std::string& key) {
  for (const auto& [k, v] : config) {
    if (k == key) return &v;
  }
  return nullptr;
}

// The value as the field's text, or ConfigError naming the key.
std::string text(const Key& key, const StoredValue& v) {
  if (std::holds_alternative<int64_t>(v)) return std::to_string(std::get<int64_t>(v));
  if (!key.integer && std::holds_alternative<double>(v))
    return fmt::format("{}", std::get<double>(v));
  throw ConfigError(fmt::format("nanoGPT config['{}'] is not {}", key.nanogpt,
                                key.integer ? "an int" : "a number"));
}

}  // namespace

TrainOptions recipe_from_nanogpt(const StoredFields& config, TrainOptions o) {
  for (const Key& key : kKeys) {
    if (const StoredValue* v = find(config, key.nanogpt)) {
      set_field(o, key.field, text(key, *v), std::string("nanoGPT config['") + key.nanogpt + "']");
    }
  }
  const StoredValue* decay = find(config, "decay_lr");
  if (decay && std::holds_alternative<bool>(*decay) && !std::get<bool>(*decay)) {
    o.min_lr(o.lr()).warmup_steps(0);  // train.py: lr = learning_rate at every step
  }
  return o;
}

std::vector<std::string> nanogpt_recipe_lines(const StoredFields& config) {
  std::vector<std::string> out;
  for (const Key& key : kKeys) {
    if (const StoredValue* v = find(config, key.nanogpt)) {
      out.push_back(fmt::format("{} {} -> {}", key.nanogpt, text(key, *v), key.field));
    }
  }
  return out;
}

StoredFields nanogpt_config(const TrainOptions& o, const GPTConfig& m, const std::string& dataset) {
  return {{"out_dir", std::string("out")},
          {"eval_interval", o.eval_interval()},
          {"log_interval", int64_t{1}},
          {"eval_iters", o.eval_steps()},
          {"eval_only", false},
          {"always_save_checkpoint", true},
          {"init_from", std::string("scratch")},
          {"wandb_log", false},
          {"dataset", dataset},
          {"gradient_accumulation_steps", o.grad_accum()},
          {"batch_size", o.batch_size()},
          {"block_size", m.block_size()},
          {"n_layer", m.n_layer()},
          {"n_head", m.n_head()},
          {"n_embd", m.n_embd()},
          {"dropout", m.dropout()},
          {"bias", m.bias()},
          {"learning_rate", o.lr()},
          {"max_iters", o.max_steps()},
          {"weight_decay", o.weight_decay()},
          {"beta1", o.beta1()},
          {"beta2", o.beta2()},
          {"grad_clip", o.grad_clip()},
          {"decay_lr", true},
          {"warmup_iters", o.warmup_steps()},
          {"lr_decay_iters", o.lr_decay_steps() ? o.lr_decay_steps() : o.max_steps()},
          {"min_lr", o.min_lr()},
          {"backend", std::string("nccl")},
          {"device", std::string("cuda")},
          {"dtype", std::string("float32")},
          {"compile", false}};
}

}  // namespace gpt2
