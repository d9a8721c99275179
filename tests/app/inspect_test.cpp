#include "apps/gpt2/inspect/inspect_command.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/serialize.h>
#include <torch/version.h>

#include <filesystem>
#include <sstream>

#include "apps/gpt2/export_command.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/error.h"
#include "gpt2/model/gpt.h"
#include "gpt2/audit/init_audit.h"
#include "gpt2/runtime/runtime.h"
#include "test_util.h"

namespace gpt2::app {
namespace {

InspectFlags small_flags() {
  InspectFlags flags;
  flags.model.set("n_layer", "2").set("n_head", "4").set("n_embd", "256");
  flags.model.set("vocab_size", "1000").set("block_size", "64");
  return flags;
}

TEST(Inspect, ReportsCountsTieAndPassesOnAFreshModel) {
  std::ostringstream out;
  EXPECT_EQ(run_inspect(small_flags(), out), 0) << out.str();
  const std::string report = out.str();
  EXPECT_NE(report.find("same tensor: ok"), std::string::npos) << report;
  EXPECT_NE(report.find(std::string("runtime   LibTorch " TORCH_VERSION "; BLAS ") + runtime_info().blas_kind),
            std::string::npos) << report;
  EXPECT_NE(runtime_info().blas_kind, "unknown");
  EXPECT_NE(report.find("scheme 2n (N = 4)"), std::string::npos) << report;
  EXPECT_NE(report.find("all checks passed"), std::string::npos) << report;
}

TEST(Inspect, SaveWritesACheckpointThatTorchLoadAlsoReads) {
  testing::TempDir dir;
  auto flags = small_flags();
  flags.save_path = dir / "model.pt";
  std::ostringstream out;
  ASSERT_EQ(run_inspect(flags, out), 0) << out.str();
  GPT loaded(flags.model.config().init(InitOptions().seed(99)));
  torch::load(loaded, flags.save_path);
  GPT fresh(flags.model.config());  // same seed as inspect's
  EXPECT_TRUE(torch::equal(loaded->block(1)->mlp->c_proj->weight,
                           fresh->block(1)->mlp->c_proj->weight));
  EXPECT_EQ(to_string(load_checkpoint(flags.save_path).model->config), to_string(fresh->config));
  EXPECT_EQ(dir.entries(), 1) << "a temporary file was left behind";
}

TEST(Inspect, SaveToMissingFolderIsATypedErrorNamingThePath) {
  auto flags = small_flags();
  flags.save_path = "/nonexistent-folder/model.pt";
  std::ostringstream out;
  try {
    run_inspect(flags, out);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-folder/model.pt"), std::string::npos);
  }
}

TEST(Inspect, ReportExitsOneWhenACheckFails) {
  GPT model(small_flags().model.config());
  {
    torch::NoGradGuard no_grad;
    model->block(0)->mlp->c_proj->weight.mul_(2.0);
  }
  std::ostringstream out;
  EXPECT_EQ(report(*model, out), 1);
  EXPECT_NE(out.str().find("SOME CHECKS FAILED"), std::string::npos) << out.str();
}

// inspect's init checks are the audit (gpt2::audit_init) against the
// model's own config: a mistake in one tensor fails its family alone.
const FamilyAudit& family_of(const InitAudit& a, const char* name) {
  for (const auto& f : a.families) {
    if (f.family == name) return f;
  }
  throw std::runtime_error(std::string("no family ") + name);
}

TEST(InspectInit, FlagsAWronglyScaledProjectionByName) {
  GPT model(small_flags().model.config());
  {
    torch::NoGradGuard no_grad;
    model->block(1)->attn->c_proj->weight.mul_(std::sqrt(2.0));  // the N = n_layer mistake
  }
  std::ostringstream out;
  EXPECT_EQ(report(*model, out), 1);
  EXPECT_NE(out.str().find("finding   attn.c_proj.weight: "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("(worst: transformer.h.1.attn.c_proj.weight)"), std::string::npos)
      << out.str();
  const InitAudit a = audit_init(*model);
  for (const auto& f : a.families) EXPECT_EQ(f.ok, f.family != "attn.c_proj.weight") << f.family;
}

// Under the zero scheme the projections are a constant family, expected
// "= 0" and checked exactly: a fresh model passes, and one nonzero weight
// fails its family alone.
TEST(InspectInit, ZeroSchemeChecksTheProjectionsAreExactlyZero) {
  auto flags = small_flags();
  flags.model.set("init_residual", "zero");
  std::ostringstream out;
  EXPECT_EQ(run_inspect(flags, out), 0) << out.str();
  EXPECT_NE(out.str().find("scheme zero (projections start at 0)"), std::string::npos) << out.str();
  GPT model(flags.model.config());
  const auto zero = InitAuditOptions().scheme(ResidualScale::kZero);
  EXPECT_EQ(family_of(audit_init(*model, zero), "mlp.c_proj.weight").expected_std, 0.0);
  EXPECT_TRUE(audit_init(*model, zero).ok());
  {
    torch::NoGradGuard no_grad;
    model->block(1)->mlp->c_proj->weight[0][5] = 1e-6;
  }
  const InitAudit a = audit_init(*model, zero);
  for (const auto& f : a.families) EXPECT_EQ(f.ok, f.family != "mlp.c_proj.weight") << f.family;
  EXPECT_EQ(family_of(a, "mlp.c_proj.weight").off_values, 1);
}

TEST(InspectInit, FlagsANonZeroBias) {
  GPT model(small_flags().model.config());
  {
    torch::NoGradGuard no_grad;
    model->block(0)->mlp->c_fc->bias[3] = 1e-3;
  }
  const InitAudit a = audit_init(*model);
  const FamilyAudit& biases = family_of(a, "Linear biases");
  EXPECT_FALSE(biases.ok);
  EXPECT_EQ(biases.off_values, 1);
  std::ostringstream out;
  EXPECT_EQ(report(*model, out), 1);
  EXPECT_NE(out.str().find("finding   Linear biases: 1 of "), std::string::npos) << out.str();
}

TEST(ExportCommand, ExportsACheckpointOrAFreshModel) {
  testing::TempDir dir;
  auto inspect = small_flags();
  inspect.save_path = dir / "model.pt";
  std::ostringstream ignored;
  ASSERT_EQ(run_inspect(inspect, ignored), 0);

  ExportFlags from_checkpoint;
  from_checkpoint.checkpoint = inspect.save_path;
  from_checkpoint.out = dir / "a.ts";
  ExportFlags fresh;
  fresh.model = inspect.model;  // same flags and seed: the same tensors
  fresh.out = dir / "b.ts";
  std::ostringstream out;
  EXPECT_EQ(run_export(from_checkpoint, out), 0);
  EXPECT_EQ(run_export(fresh, out), 0);
  EXPECT_NE(out.str().find("exported  " + from_checkpoint.out), std::string::npos) << out.str();

  auto a = torch::jit::load(from_checkpoint.out), b = torch::jit::load(fresh.out);
  auto idx = torch::randint(1000, {1, 9});
  EXPECT_TRUE(torch::equal(a.forward({idx}).toTensor(), b.forward({idx}).toTensor()));
}

TEST(ModelFlags, OverridesApplyAndBadCombinationsAreConfigErrors) {
  ModelFlags flags;
  flags.preset = "gpt2-medium";
  flags.set("n_layer", "3").set("init_residual", "n");
  const GPTConfig c = flags.config();
  EXPECT_EQ(c.n_layer(), 3);
  EXPECT_EQ(c.n_embd(), 1024);
  EXPECT_EQ(c.init().residual(), ResidualScale::kOnePerBlock);
  flags.set("n_head", "7");
  EXPECT_THROW(flags.config(), ConfigError);
}

}  // namespace
}  // namespace gpt2::app
