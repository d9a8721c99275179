#include "apps/gpt2/inspect/audit_report.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <filesystem>
#include <ostream>

#include "gpt2/io/model_source.h"
#ifdef GPT2_WITH_PLOT
#include "apps/gpt2/plot/audit_plot.h"
#endif

namespace gpt2::app {
namespace {

std::string rule_line(const InitAuditOptions& o, int64_t n_layer) {
  const double residual = audited_residual_std(o, n_layer);
  const std::string projections =
      residual == 0 ? std::string("0 (zero)") : fmt::format("N(0, {:.6f}^2)", residual);
  return fmt::format("scheme {}: Linear weights and wte N(0, {}^2), wpe N(0, 0.02^2) or N(0, "
                     "0.01^2), residual projections {}, biases 0, LayerNorm gains 1",
                     to_string(o.scheme()), o.std(), projections);
}

void print_family(const FamilyAudit& f, std::ostream& out) {
  const std::string expected = f.expected_std > 0 ? fmt::format("{:.6f}", f.expected_std)
                                                  : fmt::format("= {}", f.expected_mean);
  const std::string ratio = f.expected_std > 0 ? fmt::format("{:.3f}", f.std / f.expected_std) : "";
  const std::string z =
      f.expected_std > 0 ? fmt::format("{:.1f} / {:.1f}", f.z, f.z_bound) : fmt::format("{} off", f.off_values);
  fmt::print(out, "  {:<19} {:>5} {:>12} {:>10.2e} {:>10.6f} {:>10} {:>7} {:>13}  {}{}\n", f.family,
             f.tensors, f.elements, f.mean, f.std, expected, ratio, z, f.ok ? "ok" : "FAIL",
             f.diagnosis.empty() ? "" : " (" + f.diagnosis + ")");
}

std::string default_plot_path(const std::string& file) {
  std::filesystem::path p(file);
  std::string stem = p.filename().string();
  if (stem.empty()) stem = p.parent_path().filename().string();  // a folder given as "dir/"
  return stem + "-init-audit.svg";
}

}  // namespace

void print_family_table(const InitAudit& audit, std::ostream& out) {
  fmt::print(out, "  {:<19} {:>5} {:>12} {:>10} {:>10} {:>10} {:>7} {:>13}\n", "family", "count",
             "elements", "mean", "std", "rule std", "ratio", "|z| / bound");
  for (const FamilyAudit& f : audit.families) print_family(f, out);
}

int print_audit(const InitAudit& audit, const InitAuditOptions& options, const std::string& source,
                std::ostream& out) {
  fmt::print(out, "rule      {}\n", rule_line(options, audit.n_layer));
  fmt::print(out, "shapes    {}\n", audit.shapes);
  fmt::print(out, "tie       {}: {}\n", audit.tie_line, audit.tie_ok ? "ok" : "FAIL");
  for (const auto& name : audit.unknown) fmt::print(out, "unknown   {} (not judged)\n", name);
  if (!audit.initialized) {
    fmt::print(out, "moved     {}: the weights are not at initialization, so the init is not "
                    "judged\n", audit.moved);
    fmt::print(out, "result    {}: init not judged (trained), tie {}\n", source,
               audit.tie_ok ? "ok" : "FAIL");
    return audit.tie_ok ? kAuditNotJudged : kAuditDeparts;
  }
  fmt::print(out, "verdict   a drawn family fails when |z| of its std or mean, pooled or of one "
                  "tensor, passes the bound (false alarm {:g} a family)\n", options.false_alarm());
  print_family_table(audit, out);
  for (const auto& finding : audit.findings) fmt::print(out, "finding   {}\n", finding);
  fmt::print(out, "result    {}: {}\n", source,
             audit.ok() ? "follows GPT-2's initialization and tie"
                        : fmt::format("DEPARTS from the rule ({} finding{})", audit.findings.size(),
                                      audit.findings.size() == 1 ? "" : "s"));
  return audit.ok() ? kAuditFollows : kAuditDeparts;
}

int run_audit(const AuditFlags& flags, std::ostream& out) {
  const FileTensors file = read_model_tensors(flags.file);
  const InitAuditOptions options = InitAuditOptions()
                                       .scheme(residual_scale_from_string(flags.scheme))
                                       .one_storage_possible(file.one_storage_possible);
  fmt::print(out, "audit     {} ({}, {} tensors)\n", flags.file, to_string(file.format),
             file.tensors.size());
  const InitAudit audit = audit_init(file.tensors, options);
  if (audit.initialized && flags.plot != "none") {
    const std::string plot = flags.plot.empty() ? default_plot_path(flags.file) : flags.plot;
#ifdef GPT2_WITH_PLOT
    plot_init_audit(audit, plot, fmt::format("{}: std per layer against the rule ({})",
                                             std::filesystem::path(flags.file).filename().string(),
                                             to_string(options.scheme())));
    fmt::print(out, "picture   {} (each family's std per layer, the rule dashed)\n", plot);
#else
    fmt::print(out, "picture   none: this build draws no pictures (GPT2_WITH_PLOT=OFF)\n");
#endif
  }
  return print_audit(audit, options, flags.file, out);
}

}  // namespace gpt2::app
