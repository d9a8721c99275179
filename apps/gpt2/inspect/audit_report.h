#pragma once
// `gpt2 inspect --audit-init FILE`: the init audit of a model file of any
// format (gpt2::audit_init), printed one line per family and per finding,
// with the depth profile drawn beside it.

#include <iosfwd>
#include <string>

#include "gpt2/audit/init_audit.h"

namespace gpt2::app {

/// The audit's flags.
struct AuditFlags {
  /// The model file (any format load_model_file reads).
  std::string file;
  /// The scheme audited against: 2n (GPT-2), n, none, zero.
  std::string scheme = "2n";
  /// The depth profile's SVG; empty: `<file name>-init-audit.svg` in the
  /// working folder; "none": no picture.
  std::string plot;
};

/// Exit status of an audit: the file follows the rule and the tie holds.
constexpr int kAuditFollows = 0;
/// A finding: the init or the tie departs from the rule. (2 is every
/// command's status for a file or flag it cannot use.)
constexpr int kAuditDeparts = 1;
/// The weights have moved from any init (trained): the init is not judged,
/// and the tie holds (a broken tie is kAuditDeparts).
constexpr int kAuditNotJudged = 3;

/// Prints the audit's family table: a header line and one line per family
/// (count, elements, mean, std, the rule's std, ratio, |z| and its bound,
/// verdict, diagnosis).
void print_family_table(const InitAudit& audit, std::ostream& out);

/// Prints `audit` of `source` under `options` to `out`; returns the exit status.
int print_audit(const InitAudit& audit, const InitAuditOptions& options, const std::string& source,
                std::ostream& out);

/// Reads `flags.file`, audits it, prints the report (and draws the picture
/// where the command draws pictures); returns the exit status.
int run_audit(const AuditFlags& flags, std::ostream& out);

}  // namespace gpt2::app
