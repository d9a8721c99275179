#pragma once
/// An audit of a GPT-2's weights against GPT-2's initialization (paper,
/// section 2.3) and the lm_head / wte tie, for a model built anywhere: the
/// tensors are taken by their nanoGPT names, never from this library's
/// modules, so a file from another codebase is judged by the same rule.
///
/// Each family of tensors (wte, wpe, the c_attn, attn.c_proj, c_fc and
/// mlp.c_proj weights, the LayerNorm gains and biases, the Linear biases)
/// is held against the distribution the rule gives it. A drawn family
/// passes when its mean and std, pooled and per tensor, are within the
/// z-score bound a correct draw exceeds with probability below 1e-6 in all
/// (normal approximation: the sample std of n draws has standard error
/// std / sqrt(2n), the mean std / sqrt(n)); a constant family passes when
/// every value is the constant.

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpt2/model/config.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// What audit_init holds the tensors against.
struct InitAuditOptions {
  /// The residual projections' scheme: kTwoPerBlock is GPT-2's rule.
  TORCH_ARG(ResidualScale, scheme) = ResidualScale::kTwoPerBlock;
  /// std of the Linear weights and of wte.
  TORCH_ARG(double, std) = 0.02;
  /// std of wpe; unset: 0.02 (nanoGPT) or 0.01 (GPT-2's TensorFlow code),
  /// whichever the file is nearer to.
  TORCH_ARG(std::optional<double>, wpe_std) = std::nullopt;
  /// Whether the file could have held lm_head and wte as one storage (a
  /// torch.save archive can; safetensors and llm.c files cannot): equal
  /// copies fail where one storage was possible.
  TORCH_ARG(bool, one_storage_possible) = true;
  /// Probability that a correct model is flagged, per family.
  TORCH_ARG(double, false_alarm) = 1e-6;
};

/// One family of tensors and its verdict.
struct FamilyAudit {
  /// "wte", "wpe", "attn.c_attn.weight", "LayerNorm gains", ...
  std::string family;
  int tensors = 0;
  int64_t elements = 0;
  /// The rule's std; 0 for a constant family (then expected_mean is the constant).
  double expected_std = 0;
  double expected_mean = 0;
  /// Measured over the family's elements pooled.
  double mean = 0;
  double std = 0;
  /// Constant families: how many values differ from the constant.
  int64_t off_values = 0;
  /// Drawn families: the largest |z| over the pooled and per-tensor tests,
  /// and the |z| a verdict of failure needs.
  double z = 0;
  double z_bound = 0;
  /// Per layer (the per-layer families), in layer order: each tensor's std.
  std::vector<double> layer_std;
  bool ok = true;
  /// What the numbers match: "the rule", or a known mistake by name.
  std::string diagnosis;
};

/// How lm_head.weight stands to transformer.wte.weight in the tensors.
enum class TieForm {
  kOneTensor,    ///< one storage under both names
  kEqualCopies,  ///< equal values, two storages
  kDifferent,    ///< values differ: untied
  kHeadAbsent,   ///< no lm_head.weight: the format ties it (Hugging Face, llm.c)
};

/// The audit of one model.
struct InitAudit {
  int64_t n_layer = 0;
  /// False when the weights have moved from any initialization (see
  /// `moved`); the families are then not judged, the tie and shapes are.
  bool initialized = true;
  /// Why the model counts as trained: the share of LayerNorm gains that
  /// are not exactly 1 (every GPT-2 initialization sets them to 1).
  std::string moved;
  TieForm tie = TieForm::kHeadAbsent;
  bool tie_ok = true;
  std::string tie_line;
  /// The shapes: "12 layers, n_embd 768, vocabulary 50257, block 1024".
  std::string shapes;
  std::vector<FamilyAudit> families;
  /// One line per failure, the tie's included.
  std::vector<std::string> findings;
  /// Tensors the audit does not know by name (listed, not judged).
  std::vector<std::string> unknown;
  /// The weights follow the rule and the tie holds.
  bool ok() const { return initialized && findings.empty(); }
};

/// Audits `tensors` (nanoGPT names, lm_head.weight where stored) against
/// GPT-2's initialization under `options`. Throws ConfigError when they
/// hold no transformer.wte.weight or no layer.
InitAudit audit_init(const std::map<std::string, torch::Tensor>& tensors,
                     const InitAuditOptions& options = {});

/// audit_init over `model`'s parameters (the tie is one tensor by construction).
InitAudit audit_init(const GPTImpl& model, const InitAuditOptions& options = {});

/// The residual projections' std under `options` for `n_layer` layers: std
/// / sqrt(2 n_layer) for kTwoPerBlock, / sqrt(n_layer) for kOnePerBlock,
/// std for kNone, 0 for kZero.
double audited_residual_std(const InitAuditOptions& options, int64_t n_layer);

/// The |z| bound a correct family of `tests` tests exceeds with
/// probability `alpha` in all (two-sided, split evenly over the tests).
double z_bound(double alpha, int tests);

/// "one tensor", "equal copies", "different", "absent".
std::string to_string(TieForm form);

}  // namespace gpt2
