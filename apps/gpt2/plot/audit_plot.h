#pragma once
// The init audit's depth profile: each per-layer family's std by layer,
// against the std the rule gives it.

#include <string>

#include "gpt2/audit/init_audit.h"

namespace gpt2::app {

/// Draws `audit`'s per-layer families (c_attn, attn.c_proj, c_fc,
/// mlp.c_proj) into the SVG `path`: the measured std of each layer as a
/// line with points, the rule's std as a dashed line of the same colour, y
/// on a log scale. Throws FileError when `path` cannot be written.
void plot_init_audit(const InitAudit& audit, const std::string& path, const std::string& title);

}  // namespace gpt2::app
