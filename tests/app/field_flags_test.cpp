// The one builder of field flags (apps/gpt2/common/field_flags.h), for the
// model's table and the recipe's: the same kinds of flag from both.

#include "apps/gpt2/common/field_flags.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "apps/gpt2/common/model_flags.h"
#include "gpt2/error.h"
#include "gpt2/model/config.h"
#include "gpt2/train/train_options.h"

namespace gpt2::app {
namespace {

// The flags the builder gives a table: for each field, the flag's name (or
// nothing), whether it is a switch, and its help ends with the default.
template <class Table>
void expect_a_flag_per_field(const std::vector<Table>& presets) {
  CLI::App app;
  FieldFlags given;
  const auto options = add_field_flags(app, flag_specs(presets), given);
  size_t with_flag = 0;
  for (const auto& spec : flag_specs(presets)) {
    if (!spec.field.flag) {
      EXPECT_EQ(app.get_option_no_throw(std::string("--") + spec.field.key), nullptr);
      continue;
    }
    ++with_flag;
    const std::string name = std::string(spec.is_switch && spec.defaults[0] == "true" ? "--no-" : "--") +
                             spec.field.flag;
    const CLI::Option* option = app.get_option_no_throw(name);
    ASSERT_NE(option, nullptr) << name;
    EXPECT_EQ(option->get_type_name().empty(), spec.is_switch) << name;
    EXPECT_NE(option->get_description().find("(default"), std::string::npos) << name;
  }
  EXPECT_EQ(options.size(), with_flag);
}

TEST(FieldFlags, EachTableGetsAFlagPerFieldOfTheSameKinds) {
  expect_a_flag_per_field(std::vector<GPTConfig>{GPTConfig(), GPTConfig::preset("gpt2-xl")});
  expect_a_flag_per_field(std::vector<TrainOptions>{TrainOptions(), TrainOptions().lr(1e-3)});
}

TEST(FieldFlags, HelpShowsTheDefaultWherePresetsAgree) {
  CLI::App app;
  FieldFlags given;
  add_field_flags(app, flag_specs(std::vector<TrainOptions>{TrainOptions(), TrainOptions().lr(1e-3)}),
                  given);
  EXPECT_EQ(app.get_option("--lr")->get_description(), "Peak learning rate (default: the preset's)");
  EXPECT_EQ(app.get_option("--beta1")->get_description(), "AdamW beta1 (default: 0.9)");
  CLI::App model_app;
  add_field_flags(model_app, flag_specs(std::vector<GPTConfig>{GPTConfig()}), given, {"init_seed"},
                  {{"vocab_size", "the data's"}});
  EXPECT_EQ(model_app.get_option("--vocab-size")->get_description(),
            "Vocabulary size (rows of wte) (default: the data's)");
  EXPECT_EQ(model_app.get_option("--no-bias")->get_description(),
            "Biases in Linear and LayerNorm: off (default on)");
  EXPECT_EQ(model_app.get_option_no_throw("--seed"), nullptr);
}

TEST(FieldFlags, GivenFlagsAreRecordedInOrderAndApplyToTheirTable) {
  CLI::App app;
  FieldFlags model, train;
  add_field_flags(app, flag_specs(std::vector<GPTConfig>{GPTConfig()}), model);
  add_field_flags(app, flag_specs(std::vector<TrainOptions>{TrainOptions()}), train);
  app.parse("--no-bias --n-layer 4 --lr 2 --lr 1e-3", false);
  ASSERT_EQ(model.given.size(), 2u);  // in the table's order
  EXPECT_EQ(FieldFlags::spelled(model.given[0]), "--n-layer 4");
  EXPECT_EQ(FieldFlags::spelled(model.given[1]), "--no-bias");
  ASSERT_EQ(train.given.size(), 1u) << "a value flag given twice keeps the last";
  EXPECT_EQ(FieldFlags::spelled(train.given[0]), "--lr 1e-3");
  GPTConfig c;
  model.apply_to(c);
  EXPECT_EQ(c.n_layer(), 4);
  EXPECT_FALSE(c.bias());
  TrainOptions o;
  train.apply_to(o);
  EXPECT_EQ(o.lr(), 0.001);
  train.set("lr", "fast", "--lr");
  EXPECT_THROW(train.apply_to(o), ConfigError);
}

}  // namespace
}  // namespace gpt2::app
