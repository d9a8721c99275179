#include "gpt2/model/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/fields/table.h"
#include "gpt2/model/gpt.h"
#include "test_util.h"

namespace gpt2 {
namespace {

TEST(Config, PresetsHaveOpenAISizes) {
  struct Want { const char* name; int64_t n_layer, n_head, n_embd; };
  for (const Want& w : {Want{"gpt2", 12, 12, 768}, Want{"gpt2-medium", 24, 16, 1024},
                        Want{"gpt2-large", 36, 20, 1280}, Want{"gpt2-xl", 48, 25, 1600}}) {
    const GPTConfig c = GPTConfig::preset(w.name);
    EXPECT_EQ(c.n_layer(), w.n_layer) << w.name;
    EXPECT_EQ(c.n_head(), w.n_head) << w.name;
    EXPECT_EQ(c.n_embd(), w.n_embd) << w.name;
    EXPECT_EQ(c.vocab_size(), 50257) << w.name;
    EXPECT_EQ(c.block_size(), 1024) << w.name;
    EXPECT_TRUE(c.bias()) << w.name;
    EXPECT_EQ(c.gelu(), Gelu::kTanh) << w.name;
    EXPECT_NO_THROW(c.validate()) << w.name;
  }
}

TEST(Config, UnknownPresetNamesTheKnownOnes) {
  try {
    GPTConfig::preset("gpt3");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'gpt3'"), std::string::npos) << what;
    EXPECT_NE(what.find("gpt2, gpt2-medium, gpt2-large, gpt2-xl"), std::string::npos) << what;
  }
}

// Parameter counts of OpenAI's models, tied matrix once (nanoGPT's
// get_num_params; Hugging Face's num_parameters()).
TEST(Config, NumParametersMatchesPublishedCountsWithoutAllocating) {
  EXPECT_EQ(GPTConfig::preset("gpt2").num_parameters(), 124'439'808);
  EXPECT_EQ(GPTConfig::preset("gpt2-medium").num_parameters(), 354'823'168);
  EXPECT_EQ(GPTConfig::preset("gpt2-large").num_parameters(), 774'030'080);
  EXPECT_EQ(GPTConfig::preset("gpt2-xl").num_parameters(), 1'557'611'200);
  // nanoGPT subtracts wpe: 124,439,808 - 1024 * 768.
  EXPECT_EQ(GPTConfig::preset("gpt2").num_parameters(/*non_embedding=*/true), 123'653'376);
}

TEST(Config, ResidualStdFollowsTheScheme) {
  GPTConfig c = GPTConfig::preset("gpt2");
  EXPECT_DOUBLE_EQ(c.residual_std(), 0.02 / std::sqrt(24.0));
  c.init().residual(ResidualScale::kOnePerBlock);
  EXPECT_DOUBLE_EQ(c.residual_std(), 0.02 / std::sqrt(12.0));
  c.init().residual(ResidualScale::kNone);
  EXPECT_DOUBLE_EQ(c.residual_std(), 0.02);
  c.init().residual(ResidualScale::kZero);
  EXPECT_EQ(c.residual_std(), 0.0);
  EXPECT_EQ(c.residual_count(), 0);
}

void expect_config_error(const GPTConfig& c, const std::string& fragment) {
  try {
    c.validate();
    FAIL() << "no error for " << to_string(c);
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Config, DepthIsBoundedAtKMaxLayers) {
  EXPECT_NO_THROW(GPTConfig().n_layer(GPTConfig::kMaxLayers).n_embd(8).n_head(1).validate());
  try {
    GPTConfig().n_layer(GPTConfig::kMaxLayers + 1).validate();
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("n_layer must be at most 1024"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("got 1025"), std::string::npos) << e.what();
  }
}

TEST(Config, ValidateNamesTheBadFieldAndValue) {
  expect_config_error(GPTConfig().n_embd(100).n_head(12),
                      "n_embd 100 is not divisible by n_head 12");
  expect_config_error(GPTConfig().n_layer(0), "n_layer must be positive, got 0");
  expect_config_error(GPTConfig().vocab_size(-5), "vocab_size must be positive, got -5");
  expect_config_error(GPTConfig().block_size(0), "block_size must be positive, got 0");
  expect_config_error(GPTConfig().n_head(0), "n_head must be positive, got 0");
  expect_config_error(GPTConfig().dropout(1.0), "dropout must be in [0, 1), got 1");
  expect_config_error(GPTConfig().dropout(-0.1), "dropout must be in [0, 1), got -0.1");
  expect_config_error(GPTConfig().init(InitOptions().wpe_std(0)), "wpe_std");
}

TEST(Config, EnumNamesRoundTrip) {
  for (auto s : {ResidualScale::kTwoPerBlock, ResidualScale::kOnePerBlock, ResidualScale::kNone,
                 ResidualScale::kZero}) {
    EXPECT_EQ(residual_scale_from_string(to_string(s)), s);
  }
  EXPECT_EQ(to_string(ResidualScale::kZero), "zero");
  EXPECT_THROW(residual_scale_from_string("2L"), ConfigError);
  for (auto g : {Gelu::kTanh, Gelu::kExact}) EXPECT_EQ(gelu_from_string(to_string(g)), g);
  EXPECT_THROW(gelu_from_string("erf"), ConfigError);
  EXPECT_STREQ(torch_gelu_approximate(Gelu::kTanh), "tanh");
  EXPECT_STREQ(torch_gelu_approximate(Gelu::kExact), "none");
}

TEST(Config, WidthsPastInt64AreRefusedByTheCount) {
  // 2^33 wide: more parameters than int64 counts; the count says so.
  const GPTConfig wide = GPTConfig().n_embd(int64_t{1} << 33).n_head(1);
  EXPECT_THROW(wide.num_parameters(), ConfigError);
}

TEST(ConfigFields, TableListsEveryFieldOnceWithUniqueKeysAndFlags) {
  std::vector<std::string> keys, flags;
  for (const auto& [field, text] : field_texts(GPTConfig())) {
    keys.push_back(field.key);
    flags.push_back(field.flag);
  }
  // Written out here independently of the table: a field added to GPTConfig
  // but not to the table (or the other way round) fails this.
  EXPECT_EQ(keys, (std::vector<std::string>{"block_size", "vocab_size", "n_layer", "n_head",
                                            "n_embd", "bias", "dropout", "gelu", "init_std",
                                            "init_wpe_std", "init_residual", "init_seed"}));
  std::sort(flags.begin(), flags.end());
  EXPECT_EQ(std::adjacent_find(flags.begin(), flags.end()), flags.end());
}

TEST(ConfigFields, EveryFieldRoundTripsThroughItsText) {
  const GPTConfig changed = GPTConfig()
                                .block_size(77).vocab_size(501).n_layer(3).n_head(5).n_embd(40)
                                .bias(false).dropout(0.25).gelu(Gelu::kExact)
                                .init(InitOptions().std(0.03).wpe_std(0.01)
                                          .residual(ResidualScale::kNone)
                                          .seed(18446744073709551615ULL));
  GPTConfig rebuilt;
  for (const auto& [field, text] : field_texts(changed)) set_field(rebuilt, field.key, text, field.key);
  EXPECT_EQ(to_string(rebuilt), to_string(changed));
  EXPECT_EQ(rebuilt.init().seed(), changed.init().seed());
  EXPECT_NE(to_string(rebuilt), to_string(GPTConfig()));
}

TEST(ConfigFields, BadTextIsAConfigErrorNamingTheFlagAndTheText) {
  GPTConfig c;
  auto expect_error = [&c](const char* key, const char* text, const std::string& fragment) {
    try {
      set_field(c, key, text, std::string("--") + key);
      FAIL() << key << " accepted " << text;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error("n_layer", "99999999999999999999", "--n_layer must be an integer, got '99999999999999999999'");
  expect_error("n_layer", "3x", "got '3x'");
  expect_error("n_layer", "", "got ''");
  expect_error("init_seed", "-1", "--init_seed must be an integer in [0, 2^64) or none, got '-1'");
  expect_error("init_seed", "18446744073709551616", "got '18446744073709551616'");
  expect_error("init_seed", "1e23", "got '1e23'");
  expect_error("dropout", "nan", "must be a finite number");
  expect_error("gelu", "erf", "must be one of tanh, exact, got 'erf'");
  expect_error("bias", "yes", "must be true or false");
  EXPECT_THROW(set_field(c, "n_layers", "3", "n_layers"), ConfigError);
  EXPECT_EQ(to_string(c), to_string(GPTConfig()));  // nothing was set
}

}  // namespace
}  // namespace gpt2
