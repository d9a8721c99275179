// `gpt2 train`'s one resolver of a run's config: preset, then flags, then
// the data's vocabulary, then the checkpoint on resume.

#include "apps/gpt2/train/run_config.h"

#include <gtest/gtest.h>

#include <string>

#include "apps/gpt2/common/train_presets.h"
#include "gpt2/error.h"

namespace gpt2::app {
namespace {

DatasetMeta char_data() {
  DatasetMeta meta;
  meta.tokenizer = "char";
  meta.vocab_size = 65;
  return meta;
}

std::string error_of(const TrainPreset& preset, const ModelFlags& model, const FieldFlags& train,
                     const SavedRun* saved) {
  try {
    resolve_run_config(preset, model, train, char_data(), "data", saved);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(RunConfig, FreshRunTakesPresetThenFlagsThenTheDatasVocabulary) {
  ModelFlags model;
  model.set("n_layer", "2").set("init_seed", "none");
  FieldFlags train;
  train.set("lr", "1e-3", "--lr");
  const RunConfig run = resolve_run_config(train_preset("gpt2"), model, train, char_data(), "data");
  EXPECT_EQ(run.model.n_layer(), 2);        // the flag
  EXPECT_EQ(run.model.n_embd(), 768);       // the preset
  EXPECT_EQ(run.model.vocab_size(), 65);    // the data
  EXPECT_EQ(run.train.lr(), 1e-3);          // the flag
  EXPECT_EQ(run.train.grad_accum(), 40);    // the preset's recipe
  EXPECT_EQ(run.train.seed(), TrainOptions().seed());  // --seed none: the recipe's seed

  ModelFlags seeded;
  seeded.set("init_seed", "5").set("vocab_size", "100");
  const RunConfig s = resolve_run_config(train_preset("nano"), seeded, {}, char_data(), "data");
  EXPECT_EQ(s.train.seed(), 5u) << "the model's --seed seeds the run";
  EXPECT_EQ(s.model.vocab_size(), 100) << "--vocab-size wins over the data's";

  ModelFlags small;
  small.set("vocab_size", "50");
  EXPECT_EQ(error_of(train_preset("nano"), small, {}, nullptr),
            "--vocab-size 50 is smaller than the data's 65 ids (data)");
}

TEST(RunConfig, ResumeKeepsTheCheckpointsModelAndAcceptsEqualFlags) {
  const TrainPreset nano = train_preset("nano");
  const SavedRun saved{GPTConfig(nano.model).n_layer(2).vocab_size(65).dropout(0.1)
                           .init(InitOptions().seed(1337)),
                       TrainOptions(nano.train).max_steps(3), "out/ckpt.pt"};
  ModelFlags same;
  same.preset_given = true;  // --preset nano, as the first run had it
  same.set("n_layer", "2").set("dropout", "1e-1").set("init_seed", "1337");
  FieldFlags train;
  train.set("max_steps", "6", "--max-steps");
  const RunConfig run = resolve_run_config(nano, same, train, char_data(), "data", &saved);
  EXPECT_TRUE(field_differences(run.model, saved.model).empty()) << to_string(run.model);
  EXPECT_EQ(run.train.max_steps(), 6) << "training flags override the saved recipe";
  EXPECT_EQ(run.train.lr(), nano.train.lr());
}

TEST(RunConfig, ResumeRefusesAModelFlagOrPresetThatDiffersNamingBothValues) {
  const TrainPreset nano = train_preset("nano");
  const SavedRun saved{GPTConfig(nano.model).n_layer(4).vocab_size(65), nano.train, "out/ckpt.pt"};
  ModelFlags deeper;
  deeper.set("n_layer", "6");
  EXPECT_EQ(error_of(nano, deeper, {}, &saved),
            "--n-layer 6 differs from the checkpoint's n_layer 4 (out/ckpt.pt); a resumed run "
            "keeps its model");
  ModelFlags no_bias;
  no_bias.fields.set("bias", "false", "--no-bias", true);
  EXPECT_EQ(error_of(nano, no_bias, {}, &saved),
            "--no-bias differs from the checkpoint's bias true (out/ckpt.pt); a resumed run "
            "keeps its model");
  ModelFlags bad;
  bad.set("n_layer", "four");
  EXPECT_EQ(error_of(nano, bad, {}, &saved), "--n-layer must be an integer, got 'four'");
  ModelFlags preset;
  preset.preset = "gpt2";
  preset.preset_given = true;
  EXPECT_EQ(error_of(train_preset("gpt2"), preset, {}, &saved),
            "--preset gpt2 (its block_size 1024) differs from the checkpoint's block_size 64 "
            "(out/ckpt.pt); a resumed run keeps its model");
  const SavedRun small_vocab{GPTConfig(saved.model).vocab_size(60), nano.train, "out/ckpt.pt"};
  EXPECT_EQ(error_of(nano, ModelFlags(), {}, &small_vocab),
            "the checkpoint's vocab_size (out/ckpt.pt) 60 is smaller than the data's 65 ids (data)");
}

}  // namespace
}  // namespace gpt2::app
