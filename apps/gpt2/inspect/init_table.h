#pragma once
// The init table `gpt2 inspect` prints: each tensor group's expected and
// measured statistics. Groups are found by parameter name, on purpose: the
// library's init decides by the residual flag, and this table checks it
// with an independent oracle.

#include <string>
#include <vector>

#include "gpt2/model/gpt.h"

namespace gpt2::app {

/// One group of tensors with one expected distribution.
struct InitRow {
  std::string group;
  int tensors = 0;
  int64_t elements = 0;
  /// Expected mean (the fill value for constant groups).
  double expected_mean = 0;
  /// Expected std; 0 for constant groups (biases, LayerNorm).
  double expected_std = 0;
  /// std over all the group's elements pooled.
  double measured_std = 0;
  /// Normal groups: the largest |std / expected - 1| over the tensors.
  /// Constant groups: the largest |x - expected_mean|.
  double worst = 0;
  /// Bound on `worst`: max(1%, 6 standard errors of a sample std) for normal
  /// groups; 0 (exact) for constant groups.
  double tolerance = 0;
  bool ok = false;
};

/// The table for `model`, from its config's init scheme.
std::vector<InitRow> init_table(const GPTImpl& model);

}  // namespace gpt2::app
