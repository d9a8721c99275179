// Hugging Face GPT-2 files: names, Conv1D orientation, the tie, the config
// from shapes and config.json, all-or-nothing loads, bit-exact round trips.
#include "gpt2/io/hf_gpt2.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "gpt2/io/checkpoint.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace gpt2 {
namespace {

class HfFile : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_ / name; }
  // Writes `c` as model.safetensors in folder `name`, with `config` as its
  // config.json unless empty; returns the folder.
  std::string write_folder(const std::string& name, const SafetensorsContents& c,
                           const std::string& config) {
    std::filesystem::create_directories(path(name));
    write_safetensors(path(name) + "/model.safetensors", c);
    if (!config.empty()) testing::write_file(path(name) + "/config.json", config);
    return path(name);
  }
  testing::TempDir dir_;
};

std::map<std::string, torch::Tensor> as_map(const SafetensorsContents& c) {
  return {c.tensors.begin(), c.tensors.end()};
}

TEST_F(HfFile, WriterUsesHuggingFacesLayoutAndConfigNames) {
  GPT model(testing::tiny_config().init(InitOptions().seed(1)));
  save_safetensors(path("hf"), *model);
  const auto c = read_safetensors(path("hf/model.safetensors"));
  const auto t = as_map(c);
  EXPECT_EQ(c.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(t.size(), testing::nanogpt_names(2).size() - 1) << "the tied matrix is stored once";
  EXPECT_FALSE(t.count("lm_head.weight"));
  EXPECT_TRUE(torch::equal(t.at("wte.weight"), model->transformer->wte->weight));
  // Conv1D (in, out) = Linear's weight transposed: c_attn is (32, 96).
  EXPECT_TRUE(torch::equal(t.at("h.1.attn.c_attn.weight"), model->block(1)->attn->c_attn->weight.t()));
  EXPECT_TRUE(torch::equal(t.at("h.0.mlp.c_proj.weight"), model->block(0)->mlp->c_proj->weight.t()));
  EXPECT_TRUE(torch::equal(t.at("h.0.mlp.c_fc.bias"), model->block(0)->mlp->c_fc->bias));
  const auto config = nlohmann::json::parse(testing::read_file(path("hf/config.json")));
  EXPECT_EQ(config["model_type"], "gpt2");
  EXPECT_EQ(config["n_layer"], 2);
  EXPECT_EQ(config["n_head"], 4);
  EXPECT_EQ(config["n_embd"], 32);
  EXPECT_EQ(config["n_positions"], 16);
  EXPECT_EQ(config["vocab_size"], 96);
  EXPECT_EQ(config["activation_function"], "gelu_new");
}

// config.json speaks for every safetensors file in its folder: a second
// model of the same shapes may join the folder, one of other shapes may
// not (it would replace a's config.json and a would load as b), and then
// nothing is written.
TEST_F(HfFile, AConfigJsonOfAnotherModelIsNotReplaced) {
  GPT a(testing::tiny_config().init(InitOptions().seed(1)));
  GPT same_shapes(testing::tiny_config().init(InitOptions().seed(2)));
  GPT other(testing::tiny_config().n_head(2).init(InitOptions().seed(3)));
  save_safetensors(path("shared/a.safetensors"), *a);
  const std::string config = testing::read_file(path("shared/config.json"));
  save_safetensors(path("shared/b.safetensors"), *same_shapes);
  EXPECT_TRUE(std::filesystem::exists(path("shared/b.safetensors")));
  const std::string message = testing::file_error_of(
      [&] { save_safetensors(path("shared/c.safetensors"), *other); });
  EXPECT_NE(message.find("its folder's config.json describes"), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(path("shared/c.safetensors")));
  EXPECT_EQ(testing::read_file(path("shared/config.json")), config);
  // Nor may a itself become another model while b still reads the config.
  EXPECT_THROW(save_safetensors(path("shared/a.safetensors"), *other), FileError);
  EXPECT_EQ(testing::read_file(path("shared/config.json")), config);
}

TEST_F(HfFile, CheckpointToSafetensorsToCheckpointIsBitExactWithEqualLogits) {
  for (const auto& config : {testing::tiny_config().init(InitOptions().seed(2)),
                             testing::tiny_config().gelu(Gelu::kExact).bias(false)}) {
    GPT model(config);
    save_checkpoint(path("a.pt"), *model);
    save_safetensors(path("a.safetensors"), *load_checkpoint(path("a.pt")).model);
    GPT back = load_safetensors(path("a.safetensors"));
    save_checkpoint(path("b.pt"), *back);
    auto again = load_checkpoint(path("b.pt")).model;
    EXPECT_TRUE(testing::same_tensors(*again, testing::snapshot(*model)));
    EXPECT_EQ(again->lm_head->weight.data_ptr(), again->transformer->wte->weight.data_ptr());
    EXPECT_EQ(to_string(again->config.init(config.init())), to_string(config));
    model->eval();
    again->eval();
    const auto idx = torch::randint(96, {2, 16});
    EXPECT_TRUE(torch::equal(model(idx).logits, again(idx).logits));
  }
}

// The layout Hugging Face's own files have: `transformer.` prefixes in newer
// saves, attention-mask buffers in older ones, lm_head stored or not.
TEST_F(HfFile, PrefixesBuffersAndAStoredEqualHeadAreAccepted) {
  GPT model(testing::tiny_config().init(InitOptions().seed(3)));
  save_safetensors(path("ref"), *model);
  auto c = read_safetensors(path("ref/model.safetensors"));
  for (auto& [name, t] : c.tensors) name = "transformer." + name;
  c.tensors.emplace_back("transformer.h.0.attn.bias", torch::ones({1, 1, 16, 16}));
  c.tensors.emplace_back("transformer.h.0.attn.masked_bias", torch::tensor(-1e4));
  c.tensors.emplace_back("lm_head.weight", model->lm_head->weight.detach().clone());
  const auto folder = write_folder("hf", c, testing::read_file(path("ref/config.json")));
  EXPECT_TRUE(testing::same_tensors(*load_safetensors(folder), testing::snapshot(*model)));
}

TEST_F(HfFile, Float16AndBfloat16FilesAreConvertedToTheModelsDtype) {
  GPT model(testing::tiny_config().init(InitOptions().seed(4)));
  save_safetensors(path("ref"), *model);
  for (auto dtype : {torch::kHalf, torch::kBFloat16}) {
    auto c = read_safetensors(path("ref/model.safetensors"));
    for (auto& item : c.tensors) item.second = item.second.to(dtype);
    GPT loaded = load_safetensors(write_folder("half", c, testing::read_file(path("ref/config.json"))));
    EXPECT_EQ(loaded->transformer->wpe->weight.scalar_type(), torch::kFloat);
    EXPECT_TRUE(torch::equal(loaded->transformer->wpe->weight,
                             model->transformer->wpe->weight.to(dtype).to(torch::kFloat)));
  }
}

TEST_F(HfFile, NHeadComesFromConfigJsonOrTheCallerAndIsNeverGuessed) {
  GPT model(testing::tiny_config().n_head(2));
  save_safetensors(path("m.safetensors"), *model);
  EXPECT_EQ(load_safetensors(path("m.safetensors"))->config.n_head(), 2);
  std::filesystem::remove(path("config.json"));
  const std::string what = testing::file_error_of([&] { load_safetensors(path("m.safetensors")); });
  EXPECT_NE(what.find("n_head cannot be read from the tensor shapes"), std::string::npos) << what;
  EXPECT_NE(what.find(path("m.safetensors")), std::string::npos) << what;
  EXPECT_EQ(load_safetensors(path("m.safetensors"), HfReadOptions().n_head(8))->config.n_head(), 8);
}

TEST_F(HfFile, EveryMismatchIsListedInOneError) {
  GPT model(testing::tiny_config().init(InitOptions().seed(5)));
  save_safetensors(path("ref"), *model);
  auto c = read_safetensors(path("ref/model.safetensors"));
  std::vector<std::pair<std::string, torch::Tensor>> kept;
  for (auto& item : c.tensors) {
    if (item.first == "h.1.ln_2.bias") continue;                     // missing
    if (item.first == "h.0.attn.c_proj.weight") item.second = torch::zeros({32, 31});  // shape
    kept.push_back(item);
  }
  kept.emplace_back("h.0.attn.extra", torch::zeros({1}));                 // unexpected
  kept.emplace_back("lm_head.weight", torch::zeros({96, 32}));            // untied head
  c.tensors = kept;
  auto config = nlohmann::json::parse(testing::read_file(path("ref/config.json")));
  config["n_layer"] = 3;
  config["activation_function"] = "relu";
  const auto folder = write_folder("bad", c, config.dump());
  const std::string what = testing::file_error_of([&] { load_safetensors(folder); });
  for (const char* fragment :
       {"config.json n_layer is 3, the tensors say 2", "config.json activation_function \"relu\"",
        "missing transformer.h.1.ln_2.bias",
        "size mismatch for transformer.h.0.attn.c_proj.weight: file [31, 32], model [32, 32]",
        "unexpected transformer.h.0.attn.extra", "model.safetensors"}) {
    EXPECT_NE(what.find(fragment), std::string::npos) << fragment << "\n in: " << what;
  }
  // With every other problem gone, the untied head is the one left.
  auto clean = read_safetensors(path("ref/model.safetensors"));
  clean.tensors.emplace_back("lm_head.weight", torch::zeros({96, 32}));
  const std::string head = testing::file_error_of(
      [&] { load_safetensors(write_folder("head", clean, testing::read_file(path("ref/config.json")))); });
  EXPECT_NE(head.find("lm_head.weight and transformer.wte.weight differ"), std::string::npos) << head;
}

TEST_F(HfFile, AFailedLoadLeavesTheModelBitIdentical) {
  save_safetensors(path("three"), *GPT(testing::tiny_config().n_layer(3)));
  GPT model(testing::tiny_config().init(InitOptions().seed(6)));
  const auto before = testing::snapshot(*model);
  const std::string what = testing::file_error_of([&] { load_safetensors(path("three"), *model); });
  EXPECT_NE(what.find("unexpected transformer.h.2.ln_1.weight"), std::string::npos) << what;
  EXPECT_TRUE(testing::same_tensors(*model, before));
  EXPECT_EQ(model->lm_head->weight.data_ptr(), model->transformer->wte->weight.data_ptr());
  save_safetensors(path("two"), *GPT(testing::tiny_config().init(InitOptions().seed(7))));
  load_safetensors(path("two"), *model);
  EXPECT_FALSE(testing::same_tensors(*model, before));
}

}  // namespace
}  // namespace gpt2
