// What a checkpoint's values and holders may be: float16 weights are
// widened to float32 with a note, NaN and infinite weights are named in the
// notes, and neither a Checkpoint nor a GPT handle can hide an empty model.
#include <gtest/gtest.h>

#include <limits>
#include <type_traits>

#include "gpt2/error.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/io/state_dict.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace gpt2 {
namespace {

TEST(CheckpointValues, Float16CheckpointLoadsAsFloat32WithANote) {
  testing::TempDir dir;
  GPT model(testing::tiny_config().init(InitOptions().seed(4)));
  model->to(torch::kHalf);
  save_checkpoint(dir / "half.pt", *model);
  Checkpoint c = load_checkpoint(dir / "half.pt");
  for (const auto& item : c.model->named_parameters()) {
    EXPECT_EQ(item.value().scalar_type(), torch::kFloat) << item.key();
    // Widening is exact: every float16 value is a float32 value.
    EXPECT_TRUE(torch::equal(item.value(), model->named_parameters()[item.key()].to(torch::kFloat)))
        << item.key();
  }
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("stores Half weights: converted to float32 at load"), std::string::npos)
      << c.notes[0];
  // It runs: LibTorch 1.13's CPU LayerNorm has no Half kernel, so this threw before.
  EXPECT_EQ(c.model->forward(torch::zeros({1, 4}, torch::kLong)).logits.scalar_type(), torch::kFloat);
  GPT into(testing::tiny_config());
  EXPECT_NO_THROW(load_weights(dir / "half.pt", *into));
}

TEST(CheckpointValues, NanAndInfiniteWeightsAreNamedAndCounted) {
  testing::TempDir dir;
  GPT model(testing::tiny_config());
  {
    torch::NoGradGuard no_grad;
    auto wpe = model->transformer->wpe->weight;
    wpe[0][0] = std::numeric_limits<float>::quiet_NaN();
    wpe[3][1] = std::numeric_limits<float>::quiet_NaN();
    wpe[5][2] = -std::numeric_limits<float>::infinity();
  }
  save_checkpoint(dir / "nan.pt", *model);
  const Checkpoint c = load_checkpoint(dir / "nan.pt");
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("transformer.wpe.weight has 2 NaN and 1 infinite of 512 values"),
            std::string::npos)
      << c.notes[0];
  EXPECT_EQ(nonfinite_report(*c.model), std::vector<std::string>{
                                            "transformer.wpe.weight has 2 NaN and 1 infinite of 512 values"});
  EXPECT_TRUE(nonfinite_report(*GPT(testing::tiny_config())).empty());
}

TEST(CheckpointValues, ACheckpointAlwaysHoldsAModel) {
  static_assert(!std::is_default_constructible_v<Checkpoint>);
  try {
    Checkpoint c{GPT{nullptr}};
    FAIL() << "an empty model was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GPT{nullptr}"), std::string::npos) << e.what();
  }
}

TEST(CheckpointValues, AnEmptyGptHandleThrowsATypedErrorInsteadOfCrashing) {
  GPT empty{nullptr};
  const auto idx = torch::zeros({1, 4}, torch::kLong);
  EXPECT_THROW(empty(idx), Error);
  EXPECT_THROW(empty->forward(idx), Error);
  EXPECT_THROW((void)(*empty).config, Error);
  const GPT& const_empty = empty;
  EXPECT_THROW(const_empty->num_parameters(), Error);
  GPT model(testing::tiny_config());
  EXPECT_EQ(model(idx).logits.sizes(), (std::vector<int64_t>{1, 4, 96}));
}

// The tied matrix stored twice (Hugging Face's lm_head.weight beside wte,
// a nanoGPT file read back as two tensors): NaN equals nothing, so equal
// copies holding NaN at the same places are one matrix, and copies that
// differ by a NaN are refused with the NaN named and placed.
TEST(CheckpointValues, TiedCopiesAreComparedWithTheirNaNNamed) {
  GPT model(testing::tiny_config().init(InitOptions().seed(4)));
  StateDict tensors;
  for (const auto& item : model->named_parameters()) tensors[item.key()] = item.value().clone();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  tensors["lm_head.weight"][5][17] = nan;
  tensors["transformer.wte.weight"][5][17] = nan;
  EXPECT_TRUE(state_dict_problems(tensors, *model).empty());
  tensors["transformer.wte.weight"][5][17] = 0.5;
  const auto problems = state_dict_problems(tensors, *model);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "lm_head.weight and transformer.wte.weight differ, but this model ties "
                         "them (lm_head.weight holds 1 NaN, the first at [5, 17]; "
                         "transformer.wte.weight holds no NaN)");
  tensors["transformer.wte.weight"][5][17] = nan;
  tensors["transformer.wte.weight"][0][1] += 1;  // a plain difference is named as before
  EXPECT_EQ(state_dict_problems(tensors, *model).at(0),
            "lm_head.weight and transformer.wte.weight differ, but this model ties them");
}

}  // namespace
}  // namespace gpt2
