#include "gpt2/io/checkpoint.h"

#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "gpt2/file/atomic_file.h"
#include "gpt2/file/atomic_write_fault.h"
#include "gpt2/error.h"
#include "gpt2/train/optim.h"
#include "test_util.h"

namespace gpt2 {
namespace {

namespace fs = std::filesystem;

// Named apart from gpt2::Checkpoint, the struct load_checkpoint returns.
class CheckpointFile : public ::testing::Test {
 protected:
  void TearDown() override { detail::atomic_write_fault = nullptr; }
  std::string path(const std::string& name) const { return dir_ / name; }
  testing::TempDir dir_;
};

std::string read_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::map<std::string, torch::Tensor> snapshot(const GPTImpl& model) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& item : model.named_parameters()) out[item.key()] = item.value().clone();
  return out;
}

void expect_same_tensors(const GPTImpl& model, const std::map<std::string, torch::Tensor>& want) {
  for (const auto& item : model.named_parameters()) {
    EXPECT_TRUE(torch::equal(item.value(), want.at(item.key()))) << item.key();
  }
}

TEST_F(CheckpointFile, ConfigRoundTripsEverySeedAndNone) {
  for (const auto& init : {InitOptions(), InitOptions().seed(0),
                           InitOptions().seed(std::numeric_limits<uint64_t>::max())}) {
    const auto config = testing::tiny_config().init(init);
    save_checkpoint(path("s.pt"), *GPT(config));
    EXPECT_EQ(to_string(read_checkpoint_config(path("s.pt"))), to_string(config));
  }
}

// Every scheme is stored by its name, the three older ones as before (so
// checkpoints written before `zero` existed read as they did), and a
// zero-init model comes back with its projections at 0.
TEST_F(CheckpointFile, EveryResidualSchemeRoundTripsZeroWithItsZeroProjections) {
  for (auto scheme : {ResidualScale::kTwoPerBlock, ResidualScale::kOnePerBlock,
                      ResidualScale::kNone, ResidualScale::kZero}) {
    const auto config = testing::tiny_config().init(InitOptions().seed(4).residual(scheme));
    save_checkpoint(path("s.pt"), *GPT(config));
    const auto loaded = load_checkpoint(path("s.pt"));
    EXPECT_EQ(loaded.model->config.init().residual(), scheme) << to_string(scheme);
    EXPECT_EQ(to_string(loaded.model->config), to_string(config));
    const auto zeros = loaded.model->block(0)->attn->c_proj->weight.count_nonzero().item<int64_t>();
    EXPECT_EQ(zeros == 0, scheme == ResidualScale::kZero) << to_string(scheme);
  }
}

TEST_F(CheckpointFile, Float64CheckpointLoadsAsFloat64AndLeavesGeneratorAlone) {
  GPT model(testing::tiny_config().init(InitOptions().seed(8)));
  model->to(torch::kFloat64);
  save_checkpoint(path("f64.pt"), *model);
  torch::manual_seed(0);
  const auto want = torch::rand({4});
  torch::manual_seed(0);
  auto loaded = load_checkpoint(path("f64.pt"));
  EXPECT_TRUE(torch::equal(torch::rand({4}), want));
  EXPECT_EQ(loaded.model->lm_head->weight.scalar_type(), torch::kFloat64);
  expect_same_tensors(*loaded.model, snapshot(*model));
  EXPECT_EQ(loaded.model->lm_head->weight.data_ptr(), loaded.model->transformer->wte->weight.data_ptr());
}

TEST_F(CheckpointFile, SavedFilesGetTheUmaskModeAndKeepAReplacedFilesMode) {
  const mode_t mask = ::umask(022);  // this test's own umask, restored below
  save_checkpoint(path("new.pt"), *GPT(testing::tiny_config()));
  EXPECT_EQ(fs::status(path("new.pt")).permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
  fs::permissions(path("new.pt"), fs::perms::owner_read | fs::perms::owner_write);
  save_checkpoint(path("new.pt"), *GPT(testing::tiny_config()));
  EXPECT_EQ(fs::status(path("new.pt")).permissions(),
            fs::perms::owner_read | fs::perms::owner_write);
  ::umask(mask);
}

TEST_F(CheckpointFile, RoundTripRestoresWeightsConfigStateAndTie) {
  const auto config = testing::tiny_config().gelu(Gelu::kExact).init(InitOptions().seed(5).wpe_std(0.01));
  GPT model(config);
  TrainingState state;
  state.step = 42;
  state.rng_state = torch::arange(10, torch::kUInt8);
  save_checkpoint(path("a.pt"), *model, state);

  auto loaded = load_checkpoint(path("a.pt"));
  EXPECT_EQ(to_string(loaded.model->config), to_string(config));
  EXPECT_EQ(loaded.step, 42);
  EXPECT_TRUE(torch::equal(loaded.rng_state, state.rng_state));
  EXPECT_FALSE(loaded.has_optimizer_state);
  expect_same_tensors(*loaded.model, snapshot(*model));
  EXPECT_EQ(loaded.model->lm_head->weight.data_ptr(), loaded.model->transformer->wte->weight.data_ptr());
}

// 4 bytes per unique float32 parameter plus the zip's records and code: the
// tied matrix stored twice would add 4 x 38,597,376 bytes.
TEST_F(CheckpointFile, Gpt2CheckpointStoresTiedMatrixOnce) {
  GPT model(GPTConfig::preset("gpt2").init(InitOptions().seed(0)));
  save_checkpoint(path("gpt2.pt"), *model);
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path("gpt2.pt")));
  const int64_t payload = 4 * model->num_parameters();  // 497,759,232
  std::cout << "gpt2 checkpoint: " << size << " bytes, unique parameters x 4 = " << payload << "\n";
  EXPECT_GE(size, payload);
  EXPECT_LT(size, payload + (1 << 20));
}

TEST_F(CheckpointFile, FailedSaveLeavesOldFileWholeAndNoTemporary) {
  GPT old_model(testing::tiny_config().init(InitOptions().seed(1)));
  save_checkpoint(path("m.pt"), *old_model);
  const auto want = snapshot(*old_model);
  const std::string old_bytes = read_bytes(path("m.pt"));
  GPT new_model(testing::tiny_config().init(InitOptions().seed(2)));
  for (const char* failing_step : {"written", "synced"}) {
    detail::atomic_write_fault = [failing_step](std::string_view step) {
      if (step == failing_step) throw std::runtime_error("injected failure");
    };
    try {
      save_checkpoint(path("m.pt"), *new_model);
      FAIL() << "no error at " << failing_step;
    } catch (const FileError& e) {
      EXPECT_NE(std::string(e.what()).find(path("m.pt")), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("injected failure"), std::string::npos) << e.what();
    }
    detail::atomic_write_fault = nullptr;
    EXPECT_EQ(dir_.entries(), 1) << "a temporary file was left behind";
    EXPECT_EQ(read_bytes(path("m.pt")), old_bytes) << "the old file changed";
    expect_same_tensors(*load_checkpoint(path("m.pt")).model, want);
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FileError& e) {
    return e.what();
  }
  return "no FileError";
}

TEST_F(CheckpointFile, LoadChecksEverythingFirstAndListsEveryProblem) {
  save_checkpoint(path("two.pt"), *GPT(testing::tiny_config()));
  GPT three(testing::tiny_config().n_layer(3).vocab_size(100));
  three->to(torch::kFloat64);
  const auto before = snapshot(*three);
  const std::string what = error_of([&] { load_weights(path("two.pt"), *three); });
  for (const std::string& fragment : std::vector<std::string>{"config vocab_size differs: checkpoint 96, model 100",
                               "config n_layer differs: checkpoint 2, model 3",
                               "size mismatch for transformer.wte.weight: file [96, 32], model [100, 32]",
                               "dtype mismatch for transformer.wpe.weight: file Float, model Double",
                               "missing transformer.h.2.ln_1.weight", path("two.pt")}) {
    EXPECT_NE(what.find(fragment), std::string::npos) << fragment << "\n in: " << what;
  }
  expect_same_tensors(*three, before);
  EXPECT_EQ(three->lm_head->weight.data_ptr(), three->transformer->wte->weight.data_ptr());
}

TEST_F(CheckpointFile, UnexpectedNamesAreListed) {
  save_checkpoint(path("three.pt"), *GPT(testing::tiny_config().n_layer(3)));
  GPT two(testing::tiny_config());
  const std::string what = error_of([&] { load_weights(path("three.pt"), *two); });
  EXPECT_NE(what.find("unexpected transformer.h.2.mlp.c_fc.weight"), std::string::npos) << what;
}

TEST_F(CheckpointFile, BrokenFilesGiveTypedErrorsNamingThePath) {
  save_checkpoint(path("good.pt"), *GPT(testing::tiny_config()));
  const std::string bytes = read_bytes(path("good.pt"));
  std::ofstream(path("empty.pt"));
  std::ofstream(path("truncated.pt"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::ofstream(path("text.pt")) << "not a zip file\n";
  {
    caffe2::serialize::PyTorchStreamWriter zip(path("other.zip"));
    const std::string note = "a zip written by something else";
    zip.writeRecord("note.txt", note.data(), note.size());
    zip.writeEndOfFile();
  }
  torch::nn::Linear linear(3, 4);
  torch::save(linear, path("linear.pt"));

  GPT model(testing::tiny_config());
  const auto before = snapshot(*model);
  for (const char* name : {"missing.pt", "empty.pt", "truncated.pt", "text.pt", "other.zip", "linear.pt"}) {
    const std::string what = error_of([&] { load_weights(path(name), *model); });
    EXPECT_NE(what.find(path(name)), std::string::npos) << name << ": " << what;
    EXPECT_EQ(error_of([&] { load_checkpoint(path(name)); }).find("no FileError"), std::string::npos);
  }
  EXPECT_NE(error_of([&] { load_weights(path("linear.pt"), *model); }).find("not a gpt2 checkpoint"),
            std::string::npos);
  expect_same_tensors(*model, before);
}

TEST_F(CheckpointFile, OptimizerStateRoundTrips) {
  torch::manual_seed(12);
  GPT model(testing::tiny_config());
  const auto options = torch::optim::AdamWOptions(1e-2).weight_decay(0.1);
  auto optimizer = configure_optimizers(*model, options);
  auto idx = torch::randint(96, {2, 8});
  auto train_step = [&](GPTImpl& m, torch::optim::Optimizer& opt) {
    opt.zero_grad();
    m.forward(idx, idx).loss.backward();
    opt.step();
  };
  train_step(*model, *optimizer);
  TrainingState state;
  state.step = 1;
  state.optimizer = optimizer.get();
  save_checkpoint(path("train.pt"), *model, state);

  auto loaded = load_checkpoint(path("train.pt"));
  ASSERT_TRUE(loaded.has_optimizer_state);
  auto resumed = configure_optimizers(*loaded.model, options);
  load_optimizer_state(path("train.pt"), *resumed);
  train_step(*model, *optimizer);
  train_step(*loaded.model, *resumed);
  // Same Adam moments and step count: the second step matches bit for bit.
  expect_same_tensors(*loaded.model, snapshot(*model));

  save_checkpoint(path("weights.pt"), *model);
  auto fresh = configure_optimizers(*model, options);
  EXPECT_THROW(load_optimizer_state(path("weights.pt"), *fresh), CheckpointError);
}

// State saved for other parameters does not fit; the optimizer keeps its own.
// Without biases the decay group matches (so LibTorch loads it) and the
// no-decay group does not (so it throws): a half-restored optimizer unless
// the load puts the old state back.
TEST_F(CheckpointFile, MismatchedOptimizerStateLeavesOptimizerAsItWas) {
  torch::manual_seed(13);
  const auto options = torch::optim::AdamWOptions(1e-2);
  GPT small(testing::tiny_config().bias(false));
  auto small_opt = configure_optimizers(*small, options);
  small->forward(torch::randint(96, {1, 4}), torch::randint(96, {1, 4})).loss.backward();
  small_opt->step();
  TrainingState state;
  state.optimizer = small_opt.get();
  save_checkpoint(path("small.pt"), *small, state);

  GPT big(testing::tiny_config());
  auto big_opt = configure_optimizers(*big, options);
  auto idx = torch::randint(96, {1, 4});
  big->forward(idx, idx).loss.backward();
  big_opt->step();
  auto twin = std::dynamic_pointer_cast<GPTImpl>(big->clone());
  auto twin_opt = configure_optimizers(*twin, options);
  {
    // The twin gets the same optimizer state through a round trip.
    TrainingState s;
    s.optimizer = big_opt.get();
    save_checkpoint(path("big.pt"), *big, s);
    load_optimizer_state(path("big.pt"), *twin_opt);
  }
  EXPECT_THROW(load_optimizer_state(path("small.pt"), *big_opt), CheckpointError);
  big->zero_grad();
  twin->zero_grad();
  big->forward(idx, idx).loss.backward();
  twin->forward(idx, idx).loss.backward();
  big_opt->step();
  twin_opt->step();
  expect_same_tensors(*big, snapshot(*twin));
}

}  // namespace
}  // namespace gpt2
