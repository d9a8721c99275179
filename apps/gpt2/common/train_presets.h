#pragma once
// The `gpt2 train` presets: a model config, a tokenizer and a training
// recipe per name, from `nano` (char-level, minutes on 2 cores) to the four
// GPT-2 sizes (nanoGPT's train_gpt2 recipe), and `finetune`, a recipe for a
// model read with --init-from (nanoGPT's finetune_shakespeare).

#include <string>
#include <vector>

#include "gpt2/model/config.h"
#include "gpt2/train/train_options.h"

namespace gpt2::app {

/// What a preset sets.
struct TrainPreset {
  /// The model; vocab_size is replaced by the data's unless given. Unused
  /// when from_model_file: the model comes from --init-from.
  GPTConfig model;
  /// Whether the preset is a recipe for a model read from a file, with no
  /// model of its own (finetune).
  bool from_model_file = false;
  /// Tokenizer used when the command prepares the shipped corpus itself.
  std::string tokenizer;
  /// The recipe.
  TrainOptions train;
  /// Text generated after training.
  int sample_tokens = 0;
};

/// Preset names, smallest first: nano, gpt2, gpt2-medium, gpt2-large,
/// gpt2-xl; then finetune.
std::vector<std::string> train_preset_names();
/// The preset called `name`; ConfigError naming the known ones otherwise.
TrainPreset train_preset(const std::string& name);

}  // namespace gpt2::app
