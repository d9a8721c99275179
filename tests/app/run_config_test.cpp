// `gpt2 train`'s one resolver of a run's config: preset, then flags, then
// the data's vocabulary, then the checkpoint on resume or the model file of
// --init-from.

#include "apps/gpt2/train/run_config.h"

#include <gtest/gtest.h>

#include <string>

#include "apps/gpt2/common/train_presets.h"
#include "gpt2/error.h"
#include "gpt2/fields/table.h"

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

std::string pretrained_error(const ModelFlags& model, const Pretrained& from,
                             const DatasetMeta& data = char_data()) {
  try {
    resolve_run_config(train_preset("finetune"), model, {}, data, "data", nullptr, &from);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(RunConfig, InitFromTakesTheFilesModelTheRecipeAndCropsOrSetsDropoutAndSeed) {
  const Pretrained from{GPTConfig(train_preset("nano").model), "m.bin"};
  ModelFlags flags;
  flags.set("block_size", "32").set("dropout", "0.2").set("init_seed", "9");
  const RunConfig run = resolve_run_config(train_preset("finetune"), flags, {}, char_data(),
                                           "data", nullptr, &from);
  EXPECT_EQ(run.model.block_size(), 32) << "cropped from 64";
  EXPECT_EQ(run.model.dropout(), 0.2);
  EXPECT_EQ(run.model.n_embd(), 128) << "the file's, not the preset's";
  EXPECT_EQ(run.model.init().seed(), from.model.init().seed()) << "the file's weights' seed";
  EXPECT_EQ(run.train.seed(), 9u) << "--seed seeds the run";
  EXPECT_EQ(run.train.lr(), 3e-5) << "the finetune recipe";
  EXPECT_EQ(run.train.min_lr(), 3e-5) << "constant";

  const RunConfig plain = resolve_run_config(train_preset("finetune"), ModelFlags(), {},
                                             char_data(), "data", nullptr, &from);
  EXPECT_EQ(plain.model.block_size(), 64);
  EXPECT_EQ(plain.train.seed(), 1337u) << "the seed a fresh run of the same flags would use";

  ModelFlags same;
  same.set("n_layer", "4").set("block_size", "64");
  EXPECT_EQ(pretrained_error(same, from), "accepted") << "flags equal to the file's";
}

TEST(RunConfig, InitFromRefusesAnotherArchitectureALongerBlockAndDataOfAnotherVocabulary) {
  const Pretrained from{GPTConfig(train_preset("nano").model), "m.bin"};
  ModelFlags longer;
  longer.set("block_size", "128");
  EXPECT_EQ(pretrained_error(longer, from),
            "--block-size 128 differs from m.bin's block_size 64; its wpe has that many rows: a "
            "model can be cropped, not stretched");
  ModelFlags no_bias;
  no_bias.fields.set("bias", "false", "--no-bias", true);
  EXPECT_EQ(pretrained_error(no_bias, from),
            "--no-bias differs from m.bin's bias true; --init-from takes the model from the file "
            "(--block-size may crop it, --dropout and --seed may be set)");
  ModelFlags scheme;
  scheme.set("init_residual", "none");
  EXPECT_NE(pretrained_error(scheme, from).find("--init-scheme none differs from m.bin's "
                                                "init_residual 2n"),
            std::string::npos);

  const Pretrained bpe_model{GPTConfig(), "gpt2/"};
  EXPECT_EQ(pretrained_error(ModelFlags(), bpe_model),
            "data is character-level data with 65 ids, but gpt2/ has vocab_size 50257: its token "
            "ids would mean other things (prepare the text with --tokenizer gpt2 for a GPT-2 "
            "model)");
  DatasetMeta bpe;
  bpe.tokenizer = "gpt2";
  bpe.vocab_size = 50257;
  EXPECT_EQ(pretrained_error(ModelFlags(), from, bpe),
            "m.bin's vocab_size 65 is smaller than the data's 50257 ids (data)");

  const SavedRun saved{from.model, TrainOptions(), "out/ckpt.pt"};
  EXPECT_THROW(resolve_run_config(train_preset("nano"), ModelFlags(), {}, char_data(), "data",
                                  &saved, &from),
               ConfigError);
  ModelFlags finetune;
  finetune.preset = "finetune";
  EXPECT_EQ(error_of(train_preset("finetune"), finetune, {}, nullptr),
            "the finetune preset is a recipe for a model read from a file: give --init-from MODEL");
}

}  // namespace
}  // namespace gpt2::app
