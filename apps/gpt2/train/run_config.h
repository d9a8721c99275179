#pragma once
// The one place `gpt2 train` decides what a run trains: the model's config
// and the recipe, from the preset, the flags, the data and, on --resume,
// the checkpoint, or on --init-from, the model file.

#include <string>

#include "apps/gpt2/common/field_flags.h"
#include "apps/gpt2/common/model_flags.h"
#include "apps/gpt2/common/train_presets.h"
#include "gpt2/model/config.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/train_options.h"

namespace gpt2::app {

/// The config and recipe a checkpoint holds, for a resumed run.
struct SavedRun {
  /// The checkpoint's model config.
  GPTConfig model;
  /// The recipe it was trained with.
  TrainOptions train;
  /// The checkpoint's path, for messages.
  std::string path;
};

/// The model a fine-tuning run starts from (--init-from).
struct Pretrained {
  /// The file's model config.
  GPTConfig model;
  /// The file's path, for messages.
  std::string path;
};

/// What a run trains.
struct RunConfig {
  /// The model's config.
  GPTConfig model;
  /// The recipe.
  TrainOptions train;
};

/// Resolves a run's config, in this order:
///  1. the preset: its model and its recipe;
///  2. the flags: the model flags over the preset's model (init seed 1337
///     unless --seed is given), the run's seed from the model's seed, then
///     the training flags over the recipe;
///  3. the data's vocabulary: vocab_size becomes the data's ids unless
///     --vocab-size is given, and may not be smaller than them;
///  4. on resume (`saved` set), the checkpoint: its model replaces 1-3's.
///     Each model flag given must equal the checkpoint's value (compared as
///     values: --dropout 1e-1 equals 0.1), and a --preset given must agree
///     with its architecture (all but the vocabulary); otherwise a
///     ConfigError names the flag and both values. Its recipe replaces the
///     preset's, and the training flags given override it (a longer
///     --max-steps, another --grad-accum).
///  5. with --init-from (`pretrained` set), the file: its model replaces
///     1-3's, and the preset gives only the recipe. A --block-size no
///     larger than the file's crops the model (nanoGPT's crop_block_size),
///     --dropout sets dropout and --seed seeds the run; every other model
///     flag given must equal the file's value. The data's ids must fit its
///     vocabulary, and character-level data must have exactly as many ids
///     as it (a char alphabet cannot stand in for GPT-2's 50,257 tokens).
/// Throws ConfigError for any value or result that is not valid.
/// For a resumed run at step `at` of `checkpoint`: throws ConfigError, before
/// anything starts, when `at` is the recipe's last step or past it (a nanoGPT
/// iter_num beyond max_iters), naming both.
void check_steps_left(const std::string& checkpoint, int64_t at, const TrainOptions& recipe);

RunConfig resolve_run_config(const TrainPreset& preset, const ModelFlags& model_flags,
                             const FieldFlags& train_flags, const DatasetMeta& data,
                             const std::string& data_dir, const SavedRun* saved = nullptr,
                             const Pretrained* pretrained = nullptr);

}  // namespace gpt2::app
