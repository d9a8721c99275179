#pragma once
/// nanoGPT's run configuration (train.py's `config` dict, saved in its
/// ckpt.pt) as the library's TrainOptions, and back: the recipe a run
/// moved between nanoGPT and `gpt2 train` keeps.

#include <string>
#include <vector>

#include "gpt2/fields/fields.h"
#include "gpt2/io/nanogpt.h"
#include "gpt2/model/config.h"
#include "gpt2/train/train_options.h"

namespace gpt2 {

/// TrainOptions from nanoGPT's config: learning_rate, min_lr, warmup_iters,
/// lr_decay_iters, max_iters, weight_decay, beta1, beta2, grad_clip,
/// batch_size, gradient_accumulation_steps, eval_interval, eval_iters
/// (decay_lr False: a constant rate, lr everywhere). Keys it lacks keep
/// `base`'s values; a key of the wrong type is a ConfigError naming it.
/// The other keys (dataset, device, dtype, compile, ...) are not a recipe.
TrainOptions recipe_from_nanogpt(const StoredFields& config, TrainOptions base = {});

/// nanoGPT's config for a run of `options` on `model`, in train.py's names
/// (its other keys at train.py's defaults, dataset as given).
StoredFields nanogpt_config(const TrainOptions& options, const GPTConfig& model,
                            const std::string& dataset = "openwebtext");

/// The recipe's lines as `gpt2 train` prints a resumed nanoGPT run's:
/// `learning_rate 0.0006 -> lr 0.0006`, one per key taken.
std::vector<std::string> nanogpt_recipe_lines(const StoredFields& config);

}  // namespace gpt2
