#include "apps/gpt2/train_presets.h"

#include <fmt/format.h>

#include "gpt2/error.h"

namespace gpt2::app {

std::vector<std::string> train_preset_names() {
  std::vector<std::string> names = {"nano"};
  for (const auto& name : GPTConfig::preset_names()) names.push_back(name);
  return names;
}

TrainPreset train_preset(const std::string& name) {
  TrainPreset p;
  if (name == "nano") {
    // nanoGPT's CPU "baby GPT" on shakespeare_char (4 layers, 4 heads, 128
    // wide, block 64, dropout 0, lr 1e-3 to 1e-4, beta2 0.99), cut to a
    // couple of minutes on 2 cores.
    p.model = GPTConfig().block_size(64).vocab_size(65).n_layer(4).n_head(4).n_embd(128).dropout(0.0);
    p.tokenizer = "char";
    p.train = TrainOptions()
                  .batch_size(32)
                  .grad_accum(1)
                  .max_steps(600)
                  .warmup_steps(50)
                  .lr(1e-3)
                  .min_lr(1e-4)
                  .beta2(0.99)
                  .eval_interval(100)
                  .eval_steps(20)
                  .checkpoint_interval(200);
    p.sample_tokens = 400;
    return p;
  }
  try {
    p.model = GPTConfig::preset(name);
  } catch (const ConfigError&) {
    throw ConfigError(fmt::format("unknown train preset '{}'; known: nano, {}", name,
                                  fmt::join(GPTConfig::preset_names(), ", ")));
  }
  // nanoGPT's train_gpt2.py: 12 x 1024 tokens x 40 micro-batches per step.
  p.tokenizer = "gpt2";
  p.train = TrainOptions();
  p.sample_tokens = 100;
  return p;
}

}  // namespace gpt2::app
