#include "apps/gpt2/common/train_presets.h"

#include <fmt/format.h>

#include "gpt2/error.h"

namespace gpt2::app {

std::vector<std::string> train_preset_names() {
  std::vector<std::string> names = {"nano"};
  for (const auto& name : GPTConfig::preset_names()) names.push_back(name);
  names.push_back("finetune");
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
  if (name == "finetune") {
    // nanoGPT's config/finetune_shakespeare.py: batch 1, constant lr 3e-5
    // (no warm-up, no decay), 20 steps, eval every 5. Its 32 micro-batches of
    // 1024 tokens take about 3 minutes per step of GPT-2 124M on 2 cores
    // (AMD EPYC, 2 vCPUs: 21 s per 4), so here a step is 4 of them (4,096
    // tokens) and an evaluation 8 batches instead of 40: about 9 minutes for
    // the 20 steps. --grad-accum 32 --eval-steps 40 is nanoGPT's.
    p.from_model_file = true;
    p.tokenizer = "gpt2";
    p.train = TrainOptions()
                  .batch_size(1)
                  .grad_accum(4)
                  .max_steps(20)
                  .warmup_steps(0)
                  .lr(3e-5)
                  .min_lr(3e-5)
                  .eval_interval(5)
                  .eval_steps(8)
                  .checkpoint_interval(0);
    p.sample_tokens = 100;
    return p;
  }
  try {
    p.model = GPTConfig::preset(name);
  } catch (const ConfigError&) {
    throw ConfigError(fmt::format("unknown train preset '{}'; known: {}", name,
                                  fmt::join(train_preset_names(), ", ")));
  }
  // nanoGPT's train_gpt2.py: 12 x 1024 tokens x 40 micro-batches per step.
  p.tokenizer = "gpt2";
  p.train = TrainOptions();
  p.sample_tokens = 100;
  return p;
}

}  // namespace gpt2::app
