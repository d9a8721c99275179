// nanoGPT's ckpt.pt: the library's writer and reader against each other,
// nanoGPT's parameter order, the torch.save pickle dialect and the recipe.
// Python's side (its own model, optimizer and torch.save) is
// tests/python/nanogpt_ckpt.py with check_nanogpt.
#include "gpt2/io/nanogpt.h"
#include "gpt2/io/nanogpt_meta.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "gpt2/io/checkpoint.h"
#include "gpt2/io/checkpoint/pickle.h"
#include "gpt2/io/checkpoint/zip_reader.h"
#include "gpt2/ops/torch_compat.h"
#include "gpt2/train/nanogpt_run.h"
#include "gpt2/train/optim.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace gpt2 {
namespace {

#define EXPECT_HAS(what, fragment) EXPECT_NE((what).find(fragment), std::string::npos) << (what)

GPTConfig nano_config() {
  return testing::tiny_config().gelu(Gelu::kExact).init(InitOptions().seed(3));
}

TEST(NanoGPT, SavedFileReadsBackBitExactWithTheTieOneStorage) {
  testing::TempDir dir;
  GPT model(nano_config());
  const auto want = testing::snapshot(*model);
  const NanoGPTRun run{7, 2.5, {{"learning_rate", 1e-3}, {"dataset", std::string("x")}}};
  EXPECT_TRUE(save_nanogpt(dir / "ckpt.pt", *model, run).empty());
  EXPECT_EQ(detect_model_format(dir / "ckpt.pt"), ModelFormat::kNanoGPT);
  const NanoGPTCheckpoint c = load_nanogpt(dir / "ckpt.pt");
  EXPECT_TRUE(testing::same_tensors(*c.model, want));
  EXPECT_EQ(to_string(c.model->config), to_string(GPTConfig(nano_config()).init({})));
  EXPECT_EQ(c.run.iter_num, 7);
  EXPECT_EQ(c.run.best_val_loss, 2.5);  // a float32 0-d tensor: 2.5 is exact
  ASSERT_EQ(c.run.config.size(), 2u);
  EXPECT_EQ(std::get<double>(c.run.config[0].second), 1e-3);
  // One storage per unique parameter, plus best_val_loss: the tie once.
  const std::string bytes = testing::read_file(dir / "ckpt.pt");
  const detail::ZipReader zip(bytes, "ckpt.pt");
  size_t storages = 0;
  for (const auto& r : zip.records()) storages += r.name.find("/data/") != std::string::npos;
  EXPECT_EQ(storages, model->unique_parameters().size() + 1);
}

TEST(NanoGPT, ModelsWithoutBiasesRoundTripAndTheFormatIsToldByTheBytes) {
  testing::TempDir dir;
  GPT model(nano_config().bias(false));
  save_model(dir / "m.pt", *model, ModelSaveOptions().format(ModelFormat::kNanoGPT));
  EXPECT_TRUE(testing::same_tensors(*load_model(dir / "m.pt"), testing::snapshot(*model)));
  EXPECT_FALSE(load_model(dir / "m.pt")->config.bias());
  std::filesystem::copy_file(dir / "m.pt", dir / "unnamed");
  EXPECT_EQ(detect_model_format(dir / "unnamed"), ModelFormat::kNanoGPT);
  EXPECT_EQ(model_format_from_string("nanogpt"), ModelFormat::kNanoGPT);
}

// A GPU run's ckpt.pt names 'cuda:0' as each storage's location; the
// bytes are the same, and they load on the CPU.
TEST(NanoGPT, StoragesSavedFromAGpuLoadOnTheCpu) {
  testing::TempDir dir;
  GPT model(nano_config());
  save_nanogpt(dir / "cpu.pt", *model);
  auto records = testing::records_of(testing::read_file(dir / "cpu.pt"));
  const std::string cpu(
      "X\x03\x00\x00\x00"
      "cpu",
      8),
      cuda(
          "X\x06\x00\x00\x00"
          "cuda:0",
          11);
  size_t replaced = 0;
  for (auto& [name, bytes] : records) {
    if (name != "archive/data.pkl") continue;
    for (size_t at = bytes.find(cpu); at != std::string::npos;
         at = bytes.find(cpu, at + cuda.size())) {
      bytes.replace(at, cpu.size(), cuda);
      ++replaced;
    }
  }
  // One persistent id per tensor (both names of the tie), and best_val_loss's.
  EXPECT_EQ(replaced, model->named_parameters().size() + 1);
  testing::write_file(dir / "cuda.pt", testing::zip_of(records));
  EXPECT_TRUE(testing::same_tensors(*load_model(dir / "cuda.pt"), testing::snapshot(*model)));
  // Another device name is refused, naming the rule.
  for (auto& [name, bytes] : records) {
    if (name == "archive/data.pkl")
      bytes.replace(bytes.find(cuda), cuda.size(),
                    std::string("X\x06\x00\x00\x00"
                                "disk:0",
                                11));
  }
  testing::write_file(dir / "disk.pt", testing::zip_of(records));
  EXPECT_HAS(
      testing::format_error_of([&] { load_model(dir / "disk.pt"); }),
      "a persistent id other than ('storage', torch.XStorage, key, 'cpu'|'cuda[:N]'|'mps', numel)");
}

TEST(NanoGPT, OptimizerStateRoundTripsByNameOntoAnotherGrouping) {
  testing::TempDir dir;
  GPT model(nano_config());
  auto opt = configure_optimizers(*model, torch::optim::AdamWOptions(1e-2).betas({0.8, 0.9}));
  for (int step = 0; step < 2; ++step) {
    for (auto& p : model->unique_parameters()) p.mutable_grad() = torch::randn_like(p);
    opt->step();
  }
  save_nanogpt(dir / "ckpt.pt", *model, {}, opt.get());
  const NanoGPTCheckpoint c = load_nanogpt(dir / "ckpt.pt", NanoGPTReadOptions().optimizer(true));
  ASSERT_TRUE(c.optimizer);
  // One group over every parameter would mix nanoGPT's two: refused, untouched.
  torch::optim::AdamW one(c.model->unique_parameters(), torch::optim::AdamWOptions(5.0));
  EXPECT_THROW(restore_nanogpt_optimizer(*c.optimizer, *c.model, one, "f"), CheckpointError);
  EXPECT_TRUE(one.state().empty());
  auto back = configure_optimizers(*c.model, torch::optim::AdamWOptions(5.0));
  restore_nanogpt_optimizer(*c.optimizer, *c.model, *back, "f");
  const auto& o = static_cast<const torch::optim::AdamWOptions&>(back->param_groups()[0].options());
  EXPECT_EQ(o.lr(), 1e-2);
  EXPECT_EQ(std::get<0>(o.betas()), 0.8);
  const auto names = model->named_unique_parameters();
  const auto names_back = c.model->named_unique_parameters();
  for (const auto& item : names) {
    const auto& a = static_cast<const torch::optim::AdamWParamState&>(
        *opt->state().find(compat::optimizer_state_key(item.value()))->second);
    const auto& b = static_cast<const torch::optim::AdamWParamState&>(
        *back->state().find(compat::optimizer_state_key(names_back[item.key()]))->second);
    EXPECT_EQ(b.step(), 2) << item.key();
    EXPECT_TRUE(torch::equal(a.exp_avg(), b.exp_avg())) << item.key();
    EXPECT_TRUE(torch::equal(a.exp_avg_sq(), b.exp_avg_sq())) << item.key();
  }
}

TEST(NanoGPT, GroupsFollowNanoGPTsNamedParametersSplitByDim) {
  const GPTConfig config = nano_config();
  GPT model(config);
  const auto groups = nanogpt_param_groups(config);
  // The oracle: nanoGPT's names written out in the tests, the dims from the model.
  std::vector<std::string> decay, no_decay;
  for (const auto& name : testing::nanogpt_names(2)) {
    if (name == "lm_head.weight") continue;  // the tie, once, as wte
    (model->named_parameters()[name].dim() >= 2 ? decay : no_decay).push_back(name);
  }
  EXPECT_EQ(groups[0], decay);
  EXPECT_EQ(groups[1], no_decay);
  const auto no_bias = nanogpt_param_groups(GPTConfig(config).bias(false));
  EXPECT_EQ(no_bias[0], decay);
  EXPECT_EQ(no_bias[1].size(), 2u * 2 + 1) << "ln_1, ln_2 weights per block, ln_f's";
}

TEST(NanoGPT, PickleDialectsDifferInIntKeysAndGlobals) {
  const std::string int_keys("\x80\x02}(K\x01K\x02u.", 10);
  EXPECT_HAS(testing::format_error_of([&] { detail::read_pickle(int_keys, "f", "data.pkl"); }),
             "a dict key that is not a string");
  const auto v = detail::read_pickle(int_keys, "f", "data.pkl", detail::PickleDialect::kTorchSave);
  EXPECT_TRUE(v->int_keys);
  EXPECT_EQ(v->get("1")->i, 2);
  const std::string tag =
      "\x80\x02"
      "ctorch.jit._pickle\nrestore_type_tag\n.";
  EXPECT_HAS(testing::format_error_of([&] {
               detail::read_pickle(tag, "f", "data.pkl", detail::PickleDialect::kTorchSave);
             }),
             "global torch.jit._pickle.restore_type_tag is not allowed");
}

// nanoGPT's data/shakespeare_char/meta.pkl as Python 3.11's pickle.dump
// writes it (protocol 4: FRAME, MEMOIZE, SHORT_BINUNICODE, stoi's keys as
// BINGETs of itos's values), for the characters "\n", "a" and "é".
const std::string kPythonMeta(
    "\x80\x04\x95\x49\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x0a" "vocab_size"
    "\x94\x4b\x03\x8c\x04" "itos" "\x94\x7d\x94\x28\x4b\x00\x8c\x01\x0a\x94\x4b\x01\x8c\x01"
    "a\x94\x4b\x02\x8c\x02\xc3\xa9\x94\x75\x8c\x04" "stoi" "\x94\x7d\x94\x28\x68\x04\x4b\x00"
    "\x68\x05\x4b\x01\x68\x06\x4b\x02\x75\x75\x2e", 84);

TEST(NanoGPTMeta, ReadsPythonsPickleOfACharacterVocabulary) {
  const NanoGPTCharMeta meta = parse_nanogpt_meta(kPythonMeta, "meta.pkl");
  EXPECT_EQ(meta.itos, (std::vector<std::string>{"\n", "a", "\xc3\xa9"}));
  EXPECT_EQ(meta.vocab_size(), 3);
  // The library's own meta.pkl (protocol 2) reads back to the same.
  EXPECT_EQ(parse_nanogpt_meta(nanogpt_meta_pickle(meta.itos), "ours").itos, meta.itos);
}

TEST(NanoGPTMeta, PlainDataDialectRunsNothing) {
  // pickle.dumps of a __reduce__ to os.system: a global and a call.
  const std::string reduce("\x80\x04" "cposix\nsystem\n\x8c\x04" "true\x85R.", 25);
  EXPECT_HAS(testing::format_error_of([&] { parse_nanogpt_meta(reduce, "m.pkl"); }),
             "global posix.system in plain data");
  const std::string frame("\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00}.", 13);
  EXPECT_HAS(testing::format_error_of([&] { parse_nanogpt_meta(frame, "m.pkl"); }),
             "a FRAME runs past the end");
  // The checkpoint dialects keep refusing protocol 4's opcodes.
  const std::string short_string("\x80\x02\x8c\x01x.", 6);
  EXPECT_HAS(testing::format_error_of([&] {
               detail::read_pickle(short_string, "f", "data.pkl", detail::PickleDialect::kTorchSave);
             }),
             "opcode 0x8c is not allowed");
}

TEST(NanoGPTMeta, RefusesAVocabularyThatDoesNotHoldTogether) {
  const auto error_of = [](const std::vector<std::string>& itos) {
    return testing::format_error_of([&] { parse_nanogpt_meta(nanogpt_meta_pickle(itos), "m.pkl"); });
  };
  EXPECT_HAS(error_of({"a", "bc"}), "itos[1] is 'bc', expected one character");
  EXPECT_HAS(error_of({"a", "a"}), "dict key 'a' repeated");  // stoi's, in the gate
  // vocab_size 3 over an itos of 2 ('K\x03' for 'K\x02' in the writer's bytes).
  std::string bytes = nanogpt_meta_pickle({"x", "y"});
  const auto at = bytes.find(std::string("vocab_size") + "K\x02");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 11] = '\x03';
  EXPECT_HAS(testing::format_error_of([&] { parse_nanogpt_meta(bytes, "m.pkl"); }),
             "'m.pkl' is not nanoGPT's meta.pkl of a character vocabulary: itos holds 2 "
             "characters, vocab_size says 3");
}

TEST(NanoGPT, Gpt2CheckpointReaderNamesANanoGPTFile) {
  testing::TempDir dir;
  GPT model(nano_config());
  save_nanogpt(dir / "ckpt.pt", *model);
  EXPECT_HAS(testing::format_error_of([&] { load_checkpoint(dir / "ckpt.pt"); }),
             "A nanoGPT ckpt.pt is read as a model file");
}

TEST(NanoGPT, RecipeComesFromTrainPysConfig) {
  const StoredFields config = {{"learning_rate", 1e-3},
                               {"warmup_iters", int64_t{100}},
                               {"gradient_accumulation_steps", int64_t{4}},
                               {"dataset", std::string("shakespeare_char")}};
  const TrainOptions o = recipe_from_nanogpt(config);
  EXPECT_EQ(o.lr(), 1e-3);
  EXPECT_EQ(o.warmup_steps(), 100);
  EXPECT_EQ(o.grad_accum(), 4);
  EXPECT_EQ(o.batch_size(), TrainOptions().batch_size()) << "absent keys keep the base";
  const TrainOptions flat = recipe_from_nanogpt({{"learning_rate", 1e-3}, {"decay_lr", false}});
  EXPECT_EQ(flat.schedule().at(0), 1e-3);
  EXPECT_EQ(flat.schedule().at(5000), 1e-3);
  EXPECT_THROW(recipe_from_nanogpt({{"warmup_iters", 1.5}}), ConfigError);
  // And back: the names train.py reads.
  const StoredFields back = nanogpt_config(o, nano_config(), "shakespeare_char");
  EXPECT_EQ(recipe_from_nanogpt(back).lr(), 1e-3);
}

}  // namespace
}  // namespace gpt2
