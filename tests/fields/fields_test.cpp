// The field codec (gpt2/fields/fields.h) and the templates over a table
// (gpt2/fields/table.h), on GPTConfig; TrainOptions' side is in
// train/train_options_test.cpp.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "gpt2/error.h"
#include "gpt2/fields/table.h"
#include "gpt2/model/config.h"

namespace gpt2 {
namespace {

// Every value type of the codec: the text reads back to the same value,
// and a bad text leaves the value alone.
template <class T>
void expect_round_trip(const T& value) {
  T back{};
  ASSERT_TRUE(parse_field(field_text(value), back)) << field_text(value);
  EXPECT_EQ(back, value) << field_text(value);
  const T before = back;
  EXPECT_FALSE(parse_field("not a value", back));
  EXPECT_EQ(back, before);
}

TEST(Fields, EveryValueTypeRoundTripsThroughItsText) {
  for (int64_t v : {int64_t{0}, int64_t{-7}, std::numeric_limits<int64_t>::max()}) expect_round_trip(v);
  for (uint64_t v : {uint64_t{0}, std::numeric_limits<uint64_t>::max()}) expect_round_trip(v);
  expect_round_trip(true);
  expect_round_trip(false);
  for (double v : {0.0, 6e-4, 0.1, 1.0 / 3, -2.5e300, 1e-300}) expect_round_trip(v);
  expect_round_trip(Gelu::kExact);
  expect_round_trip(ResidualScale::kNone);
  expect_round_trip(std::optional<uint64_t>());
  expect_round_trip(std::optional<uint64_t>(18446744073709551615ULL));
}

TEST(Fields, TextsAreStrictAndNumbersAreParsedAsValues) {
  int64_t i = 0;
  for (const char* bad : {"", " 1", "1 ", "+1", "0x10", "1.0", "99999999999999999999"}) {
    EXPECT_FALSE(parse_field(bad, i)) << "'" << bad << "'";
  }
  uint64_t u = 0;
  EXPECT_FALSE(parse_field("-1", u));
  double a = 0, b = 0;
  for (const char* bad : {"nan", "inf", "-inf", "1e400", " 1", "1,5", ""}) {
    EXPECT_FALSE(parse_field(bad, a)) << "'" << bad << "'";
  }
  ASSERT_TRUE(parse_field("1e-3", a));
  ASSERT_TRUE(parse_field("0.001", b));
  EXPECT_EQ(a, b);
  EXPECT_EQ(field_text(a), "0.001");
  EXPECT_EQ(field_form(std::optional<uint64_t>()), "an integer in [0, 2^64) or none");
  EXPECT_EQ(field_form(Gelu::kTanh), "one of tanh, exact");
}

TEST(Fields, StoredFormRoundTripsEveryConfigField) {
  const GPTConfig changed = GPTConfig().n_layer(3).bias(false).dropout(0.25).gelu(Gelu::kExact)
                                .init(InitOptions().residual(ResidualScale::kOnePerBlock)
                                          .seed(18446744073709551615ULL));
  const StoredFields stored = stored_fields(changed);
  GPTConfig back;
  load_fields(back, stored);
  EXPECT_TRUE(field_differences(back, changed).empty()) << to_string(back);
  EXPECT_EQ(back.init().seed(), changed.init().seed());
  // An unset seed: presence false, and it stays unset.
  load_fields(back, stored_fields(GPTConfig()));
  EXPECT_FALSE(back.init().seed().has_value());
}

TEST(Fields, StoredFormErrorsNameTheField) {
  auto error_of = [](const StoredFields& in) {
    GPTConfig c;
    try {
      load_fields(c, in);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  StoredFields stored = stored_fields(GPTConfig());
  StoredFields missing(stored.begin() + 1, stored.end());
  EXPECT_EQ(error_of(missing), "it has no block_size field");
  StoredFields wrong = stored;
  wrong[2].second = std::string("12");
  EXPECT_EQ(error_of(wrong), "its n_layer field is a str, expected int");
  for (auto& [key, value] : wrong) {
    if (key == "gelu") value = std::string("erf");
  }
  wrong[2].second = int64_t{12};
  EXPECT_EQ(error_of(wrong), "its gelu field must be one of tanh, exact, got 'erf'");
}

TEST(Fields, DifferencesCompareValuesNotTexts) {
  const GPTConfig a = GPTConfig().n_layer(4).dropout(0.1);
  GPTConfig b = a;
  set_field(b, "dropout", "1e-1", "--dropout");
  EXPECT_TRUE(field_differences(a, b).empty());
  set_field(b, "n_layer", "6", "--n-layer");
  const auto d = field_differences(a, b);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(std::string(d[0].field.key), "n_layer");
  EXPECT_EQ(d[0].first, "4");
  EXPECT_EQ(d[0].second, "6");
  EXPECT_TRUE(d[0].field.architecture);
  ASSERT_TRUE(find_field(a, "init_seed"));
  EXPECT_EQ(std::string(find_field(a, "init_seed")->flag), "seed");
  EXPECT_FALSE(find_field(a, "n_layers"));
}

}  // namespace
}  // namespace gpt2
