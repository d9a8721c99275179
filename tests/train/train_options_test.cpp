// TrainOptions' field table, and the one mechanism it shares with
// GPTConfig's: the same codec, the same stored form, the same messages.

#include "gpt2/train/train_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/fields/table.h"
#include "gpt2/model/config.h"

namespace gpt2 {
namespace {

// Every field set away from its default.
TrainOptions changed_options() {
  return TrainOptions().batch_size(3).grad_accum(7).max_steps(11).warmup_steps(13)
      .lr_decay_steps(17).lr(1.0 / 3).min_lr(1e-5).weight_decay(0.25).beta1(0.5).beta2(0.75)
      .grad_clip(0.5).eval_interval(19).eval_steps(23).checkpoint_interval(29).max_skips(31)
      .seed(18446744073709551615ULL);
}

TEST(TrainOptionsFields, TableListsEveryFieldOnce) {
  std::vector<std::string> keys;
  for (const auto& [field, text] : field_texts(TrainOptions())) keys.push_back(field.key);
  // Written out independently of the table: a field added to TrainOptions
  // but not to the table (or the other way round) fails this.
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "batch_size", "grad_accum", "max_steps", "warmup_steps", "lr_decay_steps",
                      "lr", "min_lr", "weight_decay", "beta1", "beta2", "grad_clip",
                      "eval_interval", "eval_steps", "checkpoint_interval", "max_skips", "seed"}));
  EXPECT_TRUE(field_differences(changed_options(), TrainOptions()).size() == keys.size())
      << "changed_options() leaves a field at its default";
}

TEST(TrainOptionsFields, EveryFieldRoundTripsThroughTextAndStoredForm) {
  const TrainOptions changed = changed_options();
  TrainOptions from_text;
  for (const auto& [field, text] : field_texts(changed)) set_field(from_text, field.key, text, field.key);
  EXPECT_TRUE(field_differences(from_text, changed).empty()) << to_string(from_text);
  TrainOptions from_stored;
  load_fields(from_stored, stored_fields(changed));
  EXPECT_TRUE(field_differences(from_stored, changed).empty()) << to_string(from_stored);
  EXPECT_EQ(to_string(from_stored), to_string(changed));
  EXPECT_EQ(to_string(TrainOptions()).substr(0, 27), "TrainOptions(batch_size=12,");
}

// The same bad text for an integer, a number and an unknown key gives the
// same words from both tables: one parser, one set of messages.
TEST(TrainOptionsFields, BothTablesWordTheSameBadInputTheSameWay) {
  auto error_of = [](auto table, const char* key, const char* text) {
    try {
      set_field(table, key, text, "--x");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  for (const char* text : {"99999999999999999999", "3x", "", " 4", "+4", "1e3"}) {
    EXPECT_EQ(error_of(TrainOptions(), "batch_size", text), error_of(GPTConfig(), "n_layer", text));
    EXPECT_EQ(error_of(TrainOptions(), "batch_size", text),
              "--x must be an integer, got '" + std::string(text) + "'");
  }
  for (const char* text : {"nan", "inf", "1e999", "0,1", ""}) {
    EXPECT_EQ(error_of(TrainOptions(), "lr", text), error_of(GPTConfig(), "dropout", text));
  }
  EXPECT_EQ(error_of(TrainOptions(), "seed", "-1"), "--x must be an integer in [0, 2^64), got '-1'");
  EXPECT_EQ(error_of(TrainOptions(), "lrs", "1"), "TrainOptions has no field 'lrs'");
  EXPECT_EQ(error_of(GPTConfig(), "n_layers", "1"), "GPTConfig has no field 'n_layers'");
}

}  // namespace
}  // namespace gpt2
