#include "gpt2/audit/family_audit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpt2::detail {

double Moments::std() const {
  return n > 1 ? std::sqrt(std::max(0.0, (sum_sq - sum * sum / n) / (n - 1))) : 0.0;
}

Moments moments(const torch::Tensor& t) {
  const torch::Tensor x = t.detach().to(torch::kDouble);
  return {static_cast<double>(x.numel()), x.sum().item<double>(), x.square().sum().item<double>()};
}

namespace {

// |z| of a measured std and mean against N(0, sigma^2) over n draws.
double z_of(const Moments& m, double sigma) {
  const double z_std = (m.std() / sigma - 1.0) * std::sqrt(2.0 * m.n);
  const double z_mean = m.mean() / sigma * std::sqrt(m.n);
  return std::max(std::abs(z_std), std::abs(z_mean));
}

}  // namespace

// What a drawn family's pooled numbers can be told apart as, by family.
std::vector<Candidate> candidates(const std::string& family, const InitAuditOptions& o, int64_t n_layer) {
  const double s = o.std(), l = static_cast<double>(n_layer);
  std::vector<Candidate> all;
  if (family == "wpe") {
    all = {{0.02, "0.02, nanoGPT's"}, {0.01, "0.01, GPT-2's TensorFlow code"}};
  } else if (family == "attn.c_proj.weight" || family == "mlp.c_proj.weight") {
    const double rule = audited_residual_std(o, n_layer);
    all = {{rule, fmt::format("{:.6f}, the rule of scheme {}", rule, to_string(o.scheme()))},
           {s / std::sqrt(2 * l), "scaled by 1/sqrt(2*n_layer), GPT-2's rule"},
           {s, "no residual scale"},
           {s / std::sqrt(l), "scaled by 1/sqrt(n_layer) instead of 1/sqrt(2*n_layer)"},
           {s / (2 * l), "the 1/sqrt(2*n_layer) scale applied twice"},
           {s / l, "the 1/sqrt(n_layer) scale applied twice"}};
  } else if (family == "attn.c_attn.weight" || family == "mlp.c_fc.weight") {
    all = {{s, fmt::format("{}, the rule", s)},
           {s / std::sqrt(2 * l), "the residual scale 1/sqrt(2*n_layer) applied here too"},
           {s / std::sqrt(l), "the residual scale 1/sqrt(n_layer) applied here too"}};
  } else {
    all = {{s, fmt::format("{}, the rule", s)}};
  }
  // A value two names share (2 layers: 1/(2L) = 1/sqrt(2L)) keeps the first,
  // the rule before any mistake.
  std::vector<Candidate> out;
  for (const Candidate& c : all) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](const Candidate& o2) {
      return std::abs(o2.std - c.std) <= 1e-9 * std::max(o2.std, c.std);
    });
    if (c.std > 0 && !seen) out.push_back(c);
  }
  return out;
}

// A drawn family: the pooled and per-tensor tests against `sigma`, and the
// candidate the pooled numbers match.
FamilyAudit audit_drawn(const std::string& family, const Group& g, double sigma,
                        const std::vector<Candidate>& cands, const InitAuditOptions& o,
                        std::vector<std::string>& findings) {
  FamilyAudit f;
  f.family = family, f.tensors = static_cast<int>(g.members.size());
  f.expected_std = sigma;
  f.z_bound = z_bound(o.false_alarm(), 2 * (1 + f.tensors));
  Moments pooled;
  std::string worst_name;
  for (const auto& [name, t] : g.members) {
    const Moments m = moments(t);
    pooled.n += m.n, pooled.sum += m.sum, pooled.sum_sq += m.sum_sq;
    if (g.layers.size() == g.members.size()) f.layer_std.push_back(m.std());
    const double z = z_of(m, sigma);
    if (z > f.z) f.z = z, worst_name = name;
  }
  f.elements = static_cast<int64_t>(pooled.n);
  f.mean = pooled.mean(), f.std = pooled.std();
  const double z_pooled = z_of(pooled, sigma);
  if (z_pooled >= f.z) f.z = z_pooled, worst_name.clear();
  f.ok = f.z <= f.z_bound;
  double best = f.z_bound;
  for (const Candidate& c : cands) {
    const double z = c.std > 0 ? z_of(pooled, c.std) : INFINITY;
    if (z < best) best = z, f.diagnosis = c.name;  // the first of equal ones
  }
  if (!f.ok) {
    const std::string where = worst_name.empty() ? "" : fmt::format(" (worst: {})", worst_name);
    findings.push_back(fmt::format(
        "{}: std {:.6f} and mean {:.2e}, the rule gives N(0, {:.6f}^2) ({:.3f}x); |z| {:.1f} > {:.1f}{}{}",
        family, f.std, f.mean, sigma, f.std / sigma, f.z, f.z_bound, where,
        f.diagnosis.empty() ? "" : ": " + f.diagnosis));
  }
  return f;
}

// A constant family: every value must be `value`.
FamilyAudit audit_constant(const std::string& family, const Group& g, double value,
                           std::vector<std::string>& findings) {
  FamilyAudit f;
  f.family = family, f.tensors = static_cast<int>(g.members.size());
  f.expected_mean = value;
  Moments pooled;
  double gap = 0;
  for (const auto& [name, t] : g.members) {
    const Moments m = moments(t);
    pooled.n += m.n, pooled.sum += m.sum, pooled.sum_sq += m.sum_sq;
    if (g.layers.size() == g.members.size()) f.layer_std.push_back(m.std());
    const torch::Tensor d = (t.detach().to(torch::kDouble) - value).abs();
    f.off_values += d.ne(0).sum().item<int64_t>();
    gap = std::max(gap, d.max().item<double>());
  }
  f.elements = static_cast<int64_t>(pooled.n);
  f.mean = pooled.mean(), f.std = pooled.std();
  f.ok = f.off_values == 0;
  f.diagnosis = f.ok ? fmt::format("all {}", value) : fmt::format("{} values not {}", f.off_values, value);
  if (!f.ok) {
    findings.push_back(fmt::format("{}: {} of {} values are not {} (largest gap {:.3g})", family,
                                   f.off_values, f.elements, value, gap));
  }
  return f;
}

}  // namespace gpt2::detail
