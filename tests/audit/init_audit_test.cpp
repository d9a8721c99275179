// The init audit on models whose init is known by construction: the
// library's own under each scheme, each known mistake made on purpose, the
// tie's four forms, a trained model, and many seeds of a correct one.

#include "gpt2/audit/init_audit.h"

#include <gtest/gtest.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>

#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gpt2/io/model_source.h"
#include "gpt2/model/gpt.h"
#include "test_util.h"

namespace gpt2 {
namespace {

using Tensors = std::map<std::string, torch::Tensor>;

// 12 layers wide enough that a sqrt(2) mistake is many standard errors out:
// a c_proj family pools 12 x 128 x 128 draws (relative error of its std 0.16%).
GPTConfig audit_config(int64_t n_layer, ResidualScale scheme, uint64_t seed = 3) {
  return GPTConfig().block_size(64).vocab_size(512).n_layer(n_layer).n_head(4).n_embd(128)
      .init(InitOptions().residual(scheme).seed(seed));
}

// The model's tensors as a file would hold them, lm_head the same tensor.
Tensors tensors_of(const GPTImpl& model) {
  Tensors out;
  for (const auto& item : model.named_parameters()) out.emplace(item.key(), item.value().detach());
  out["lm_head.weight"] = out.at("transformer.wte.weight");
  return out;
}

const FamilyAudit& family(const InitAudit& a, const char* name) {
  for (const auto& f : a.families) {
    if (f.family == name) return f;
  }
  throw std::runtime_error(std::string("no family ") + name);
}

// Redraws every tensor whose name ends in `leaf` from N(0, std^2).
void redraw(Tensors& t, const std::string& leaf, double std) {
  torch::manual_seed(17);
  for (auto& [name, tensor] : t) {
    if (name.size() >= leaf.size() && name.compare(name.size() - leaf.size(), leaf.size(), leaf) == 0) {
      tensor = torch::randn(tensor.sizes()) * std;
    }
  }
}

TEST(InitAudit, TheLibrarysOwnInitFollowsEachSchemeAtTwoAndTwelveLayers) {
  for (const ResidualScale scheme : {ResidualScale::kTwoPerBlock, ResidualScale::kOnePerBlock,
                                     ResidualScale::kNone, ResidualScale::kZero}) {
    for (const int64_t layers : {2, 12}) {
      GPT model(audit_config(layers, scheme));
      const InitAudit a = audit_init(*model, InitAuditOptions().scheme(scheme));
      EXPECT_TRUE(a.ok()) << to_string(scheme) << " " << layers << ": "
                          << (a.findings.empty() ? "" : a.findings[0]);
      EXPECT_EQ(a.n_layer, layers);
      EXPECT_EQ(a.tie, TieForm::kOneTensor);
      EXPECT_EQ(family(a, "mlp.c_proj.weight").layer_std.size(), static_cast<size_t>(layers));
      // Named as the rule, also where a mistake gives the same std (2
      // layers: 1/(2L) = 1/sqrt(2L)).
      if (scheme != ResidualScale::kZero) {
        EXPECT_NE(family(a, "mlp.c_proj.weight").diagnosis.find("the rule of scheme " + to_string(scheme)),
                  std::string::npos) << family(a, "mlp.c_proj.weight").diagnosis;
      }
      // Held against GPT-2's rule, the other schemes depart (12 layers:
      // their projections' std differs by sqrt(2) at least).
      if (scheme != ResidualScale::kTwoPerBlock && layers == 12) {
        EXPECT_FALSE(audit_init(*model).ok()) << to_string(scheme);
      }
    }
  }
}

TEST(InitAudit, EachKnownResidualMistakeIsNamed) {
  const double rule = 0.02 / std::sqrt(24.0);
  const std::vector<std::pair<double, std::string>> cases = {
      {0.02, "no residual scale"},
      {0.02 / std::sqrt(12.0), "scaled by 1/sqrt(n_layer) instead of 1/sqrt(2*n_layer)"},
      {rule / std::sqrt(24.0), "the 1/sqrt(2*n_layer) scale applied twice"}};
  for (const auto& [std, diagnosis] : cases) {
    GPT model(audit_config(12, ResidualScale::kTwoPerBlock));
    Tensors t = tensors_of(*model);
    redraw(t, "mlp.c_proj.weight", std);
    const InitAudit a = audit_init(t);
    EXPECT_FALSE(a.ok()) << diagnosis;
    const FamilyAudit& f = family(a, "mlp.c_proj.weight");
    EXPECT_FALSE(f.ok);
    EXPECT_EQ(f.diagnosis, diagnosis);
    EXPECT_TRUE(family(a, "attn.c_proj.weight").ok);
    ASSERT_EQ(a.findings.size(), 1u);
    EXPECT_NE(a.findings[0].find(diagnosis), std::string::npos) << a.findings[0];
  }
}

TEST(InitAudit, TheResidualScaleOnTheWrongModulesIsNamed) {
  GPT model(audit_config(12, ResidualScale::kTwoPerBlock));
  Tensors t = tensors_of(*model);
  redraw(t, "mlp.c_fc.weight", 0.02 / std::sqrt(24.0));
  const InitAudit a = audit_init(t);
  const FamilyAudit& f = family(a, "mlp.c_fc.weight");
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.diagnosis, "the residual scale 1/sqrt(2*n_layer) applied here too");
  EXPECT_TRUE(family(a, "attn.c_attn.weight").ok);
}

TEST(InitAudit, WpeAtEitherPublishedStdPassesAndSaysWhich) {
  GPT model(audit_config(2, ResidualScale::kTwoPerBlock));
  Tensors t = tensors_of(*model);
  EXPECT_EQ(family(audit_init(t), "wpe").diagnosis, "0.02, nanoGPT's");
  redraw(t, "wpe.weight", 0.01);
  InitAudit a = audit_init(t);
  EXPECT_TRUE(a.ok());
  EXPECT_EQ(family(a, "wpe").diagnosis, "0.01, GPT-2's TensorFlow code");
  redraw(t, "wpe.weight", 0.05);
  a = audit_init(t);
  EXPECT_FALSE(family(a, "wpe").ok);
  EXPECT_TRUE(family(a, "wpe").diagnosis.empty());
}

TEST(InitAudit, WteStdAndBiasesThatAreNotZeroAreFindings) {
  GPT model(audit_config(2, ResidualScale::kTwoPerBlock));
  Tensors t = tensors_of(*model);
  t["transformer.wte.weight"] = torch::randn({512, 128}) * 0.01;
  t["lm_head.weight"] = t["transformer.wte.weight"];
  t["transformer.h.1.attn.c_attn.bias"] = torch::full({384}, 0.001);
  const InitAudit a = audit_init(t);
  EXPECT_FALSE(family(a, "wte").ok);
  const FamilyAudit& biases = family(a, "Linear biases");
  EXPECT_FALSE(biases.ok);
  EXPECT_EQ(biases.off_values, 384);
  EXPECT_TRUE(family(a, "LayerNorm biases").ok);
  EXPECT_EQ(a.findings.size(), 2u);
}

TEST(InitAudit, TheTieInItsFourForms) {
  GPT model(audit_config(2, ResidualScale::kTwoPerBlock));
  Tensors t = tensors_of(*model);
  EXPECT_EQ(audit_init(t).tie, TieForm::kOneTensor);
  t["lm_head.weight"] = t["transformer.wte.weight"].clone();
  InitAudit a = audit_init(t);
  EXPECT_EQ(a.tie, TieForm::kEqualCopies);
  EXPECT_FALSE(a.tie_ok);  // a torch.save archive could have held one tensor
  EXPECT_FALSE(a.ok());
  a = audit_init(t, InitAuditOptions().one_storage_possible(false));  // safetensors
  EXPECT_EQ(a.tie, TieForm::kEqualCopies);
  EXPECT_TRUE(a.ok());
  t["lm_head.weight"] = torch::randn({512, 128}) * 0.02;
  a = audit_init(t, InitAuditOptions().one_storage_possible(false));
  EXPECT_EQ(a.tie, TieForm::kDifferent);
  EXPECT_FALSE(a.ok());
  EXPECT_NE(a.findings.back().find("untied"), std::string::npos) << a.findings.back();
  t.erase("lm_head.weight");
  a = audit_init(t);
  EXPECT_EQ(a.tie, TieForm::kHeadAbsent);
  EXPECT_TRUE(a.ok());
}

TEST(InitAudit, ATrainedModelIsNotJudgedButItsTieIs) {
  GPT model(audit_config(2, ResidualScale::kTwoPerBlock));
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-2));
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    const auto x = torch::randint(512, {2, 16});
    model->forward(x, torch::randint(512, {2, 16})).loss.backward();
    opt.step();
  }
  const InitAudit a = audit_init(*model);
  EXPECT_FALSE(a.initialized);
  EXPECT_FALSE(a.ok());
  EXPECT_TRUE(a.families.empty());
  EXPECT_TRUE(a.tie_ok);
  EXPECT_NE(a.moved.find("LayerNorm gains are not 1"), std::string::npos) << a.moved;
}

// The bound: a correct model is flagged with probability below 1e-6 a
// family, so 100 seeds x 9 families pass (a flag here is a 1e-4 event).
TEST(InitAudit, ACorrectModelIsNeverFlaggedOverManySeeds) {
  EXPECT_NEAR(z_bound(1e-6, 1), 4.8916, 1e-3);  // P(|Z| > 4.8916) = 1e-6
  EXPECT_GT(z_bound(1e-6, 26), z_bound(1e-6, 4));
  for (uint64_t seed = 0; seed < 100; ++seed) {
    GPT model(GPTConfig().block_size(16).vocab_size(96).n_layer(3).n_head(2).n_embd(32)
                  .init(InitOptions().seed(seed)));
    const InitAudit a = audit_init(*model);
    ASSERT_TRUE(a.ok()) << "seed " << seed << ": " << a.findings[0];
  }
}

// Through each format's file, read as stored.
TEST(InitAudit, FilesOfEveryFormatReadAsStored) {
  GPT model(audit_config(2, ResidualScale::kTwoPerBlock));
  const testing::TempDir dir;
  const std::vector<std::tuple<std::string, ModelFormat, TieForm>> cases = {
      {"m.pt", ModelFormat::kCheckpoint, TieForm::kOneTensor},
      {"m.safetensors", ModelFormat::kSafetensors, TieForm::kHeadAbsent},
      {"m.bin", ModelFormat::kLlmc, TieForm::kHeadAbsent},
      {"ckpt.pt", ModelFormat::kNanoGPT, TieForm::kOneTensor}};
  for (const auto& [name, format, tie] : cases) {
    const std::string path = dir / name;
    save_model(path, *model, ModelSaveOptions().format(format));
    const FileTensors file = read_model_tensors(path);
    EXPECT_EQ(file.format, format) << name;
    const InitAudit a =
        audit_init(file.tensors, InitAuditOptions().one_storage_possible(file.one_storage_possible));
    EXPECT_TRUE(a.ok()) << name << ": " << (a.findings.empty() ? "" : a.findings[0]);
    EXPECT_EQ(a.tie, tie) << name << ": " << a.tie_line;
  }
}

}  // namespace
}  // namespace gpt2
