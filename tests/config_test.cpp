#include "gpt2/config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gpt2/error.h"

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
}

void expect_config_error(const GPTConfig& c, const std::string& fragment) {
  try {
    c.validate();
    FAIL() << "no error for " << to_string(c);
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
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
  for (auto s : {ResidualScale::kTwoPerBlock, ResidualScale::kOnePerBlock, ResidualScale::kNone}) {
    EXPECT_EQ(residual_scale_from_string(to_string(s)), s);
  }
  EXPECT_THROW(residual_scale_from_string("2L"), ConfigError);
  for (auto g : {Gelu::kTanh, Gelu::kExact}) EXPECT_EQ(gelu_from_string(to_string(g)), g);
  EXPECT_THROW(gelu_from_string("erf"), ConfigError);
}

}  // namespace
}  // namespace gpt2
