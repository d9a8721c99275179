#include "apps/gpt2/common/train_presets.h"

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
    // wide, block 64, dropout 0, beta2 0.99), cut to under three minutes on
    // 2 cores: 800 steps of 16 x 64 tokens at lr 3e-3 (to 3e-4) reached val
    // 1.99 by step 700 here, where nanoGPT's lr 1e-3 with 32 x 64 tokens was
    // still at 2.10 after 600 steps.
    p.model = GPTConfig().block_size(64).vocab_size(65).n_layer(4).n_head(4).n_embd(128).dropout(0.0);
    p.tokenizer = "char";
    p.train = TrainOptions()
                  .batch_size(16)
                  .grad_accum(1)
                  .max_steps(800)
                  .warmup_steps(30)
                  .lr(3e-3)
                  .min_lr(3e-4)
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
