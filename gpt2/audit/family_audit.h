#pragma once
// The init audit's tests of one family of tensors (gpt2/audit/init_audit.h):
// moments, the z-scores against a rule, the known mistakes a family's
// numbers can be told apart as. Internal to the model layer.

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpt2/audit/init_audit.h"

namespace gpt2::detail {

/// Count, sum and sum of squares of a set of values.
struct Moments {
  double n = 0, sum = 0, sum_sq = 0;
  double mean() const { return n > 0 ? sum / n : 0.0; }
  /// The sample std (n - 1 in the denominator).
  double std() const;
};

/// The moments of `t`'s values, summed in float64.
Moments moments(const torch::Tensor& t);

/// A std a drawn family's numbers can match, and its name.
struct Candidate {
  double std;
  std::string name;
};

/// What `family`'s pooled numbers can be told apart as: the rule and the
/// known mistakes (the residual scale missing, doubled, 1/sqrt(L), on the
/// wrong modules; wpe's two published stds).
std::vector<Candidate> candidates(const std::string& family, const InitAuditOptions& o,
                                  int64_t n_layer);

/// A family's tensors by name, in layer order where each has a layer.
struct Group {
  std::vector<std::pair<std::string, torch::Tensor>> members;
  std::vector<int64_t> layers;
};

/// A drawn family against N(0, sigma^2): pooled and per-tensor tests of std
/// and mean at options.false_alarm() in all, the candidate the pooled
/// numbers match; a failure appends one line to `findings`.
FamilyAudit audit_drawn(const std::string& family, const Group& g, double sigma,
                        const std::vector<Candidate>& cands, const InitAuditOptions& o,
                        std::vector<std::string>& findings);

/// A constant family: every value must be `value`; else one line in `findings`.
FamilyAudit audit_constant(const std::string& family, const Group& g, double value,
                           std::vector<std::string>& findings);

}  // namespace gpt2::detail
