#include "gpt2/audit/init_audit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include "gpt2/error.h"
#include "gpt2/audit/family_audit.h"

namespace gpt2 {
namespace {

using detail::Group;

constexpr std::string_view kLayerPrefix = "transformer.h.";
const std::vector<std::string> kLayerFamilies = {"attn.c_attn.weight", "attn.c_proj.weight",
                                                 "mlp.c_fc.weight", "mlp.c_proj.weight"};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The family of a tensor name, and its layer (-1 outside the blocks); ""
// for lm_head (the tie's) and names the audit does not know.
std::string family_of(const std::string& name, int64_t* layer) {
  *layer = -1;
  std::string leaf = name;
  if (name.rfind(kLayerPrefix, 0) == 0) {
    const size_t start = kLayerPrefix.size(), dot = name.find('.', start);
    const std::string digits = name.substr(start, dot == std::string::npos ? 0 : dot - start);
    if (digits.empty() || digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return "";
    }
    *layer = std::stoll(digits);
    leaf = name.substr(dot + 1);
    for (const auto& f : kLayerFamilies) {
      if (leaf == f) return f;
    }
  } else if (name == "transformer.wte.weight") {
    return "wte";
  } else if (name == "transformer.wpe.weight") {
    return "wpe";
  } else if (name.rfind("transformer.ln_f.", 0) != 0) {
    return "";
  }
  const bool norm = leaf.rfind("ln_", 0) == 0 || leaf.rfind("transformer.ln_f.", 0) == 0;
  if (norm && ends_with(leaf, ".weight")) return "LayerNorm gains";
  if (norm && ends_with(leaf, ".bias")) return "LayerNorm biases";
  for (const char* linear : {"attn.c_attn.bias", "attn.c_proj.bias", "mlp.c_fc.bias",
                             "mlp.c_proj.bias"}) {
    if (leaf == linear) return "Linear biases";
  }
  return "";
}

void audit_tie(const std::map<std::string, torch::Tensor>& tensors, const InitAuditOptions& o,
               InitAudit& a) {
  const torch::Tensor& wte = tensors.at("transformer.wte.weight");
  const auto head = tensors.find("lm_head.weight");
  if (head == tensors.end()) {
    a.tie = TieForm::kHeadAbsent;
    a.tie_line = "lm_head.weight is not stored: the format ties it to transformer.wte.weight";
    return;
  }
  const torch::Tensor& h = head->second;
  const bool same_shape = h.sizes() == wte.sizes();
  if (same_shape && (h.is_same(wte) || (h.data_ptr() == wte.data_ptr() && h.strides() == wte.strides()))) {
    a.tie = TieForm::kOneTensor;
    a.tie_line = "lm_head.weight and transformer.wte.weight are one tensor";
  } else if (same_shape && h.dtype() == wte.dtype() && torch::equal(h, wte)) {
    a.tie = TieForm::kEqualCopies;
    a.tie_ok = !o.one_storage_possible();
    a.tie_line = a.tie_ok ? "lm_head.weight equals transformer.wte.weight, value for value "
                            "(two copies: this format cannot hold one storage under two names)"
                          : "lm_head.weight is a copy of transformer.wte.weight, not the same "
                            "tensor: equal now, training will move them apart";
  } else {
    a.tie = TieForm::kDifferent;
    a.tie_ok = false;
    a.tie_line = same_shape ? fmt::format("lm_head.weight differs from transformer.wte.weight in "
                                          "{} of {} values: untied",
                                          h.to(torch::kDouble).ne(wte.to(torch::kDouble)).sum().item<int64_t>(),
                                          h.numel())
                            : fmt::format("lm_head.weight is {}, transformer.wte.weight {}: untied",
                                          fmt::join(h.sizes(), "x"), fmt::join(wte.sizes(), "x"));
  }
  if (!a.tie_ok) a.findings.push_back("tie: " + a.tie_line);
}

// Whether the LayerNorm gains left 1: at init every GPT-2 sets them to 1.
void judge_moved(const Group& gains, InitAudit& a) {
  int64_t off = 0, n = 0;
  for (const auto& [name, t] : gains.members) {
    off += t.detach().to(torch::kDouble).ne(1.0).sum().item<int64_t>();
    n += t.numel();
  }
  if (n > 0 && off > n / 100) {
    a.initialized = false;
    a.moved = fmt::format("{} of the {} LayerNorm gains are not 1 ({:.1f}%; an initialization sets "
                          "every one to 1, and more than 1% off means trained)",
                          off, n, 100.0 * off / n);
  }
}

// The tensors by family, each family in layer order; a.n_layer and
// a.unknown set. ConfigError when no tensor is a layer's.
std::map<std::string, Group> group_by_family(const std::map<std::string, torch::Tensor>& tensors,
                                             InitAudit& a) {
  std::map<std::string, Group> groups;
  std::set<int64_t> layers;
  for (const auto& [name, t] : tensors) {
    int64_t layer = -1;
    const std::string family = family_of(name, &layer);
    if (family.empty() && name != "lm_head.weight") a.unknown.push_back(name);
    if (family.empty()) continue;
    if (layer >= 0) layers.insert(layer);
    Group& g = groups[family];
    g.members.emplace_back(name, t);
    if (layer >= 0) g.layers.push_back(layer);
  }
  if (layers.empty()) throw ConfigError("init audit: the tensors hold no transformer.h.N layer");
  a.n_layer = static_cast<int64_t>(layers.size());
  for (auto& [family, g] : groups) {  // layer order, not the map's name order
    if (g.layers.size() != g.members.size()) continue;
    std::vector<size_t> order(g.members.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return g.layers[x] < g.layers[y]; });
    Group sorted;
    for (size_t i : order) sorted.members.push_back(g.members[i]), sorted.layers.push_back(g.layers[i]);
    g = sorted;
  }
  return groups;
}

}  // namespace

double audited_residual_std(const InitAuditOptions& options, int64_t n_layer) {
  const double l = static_cast<double>(n_layer);
  switch (options.scheme()) {
    case ResidualScale::kTwoPerBlock: return options.std() / std::sqrt(2 * l);
    case ResidualScale::kOnePerBlock: return options.std() / std::sqrt(l);
    case ResidualScale::kNone: return options.std();
    case ResidualScale::kZero: return 0.0;
  }
  return options.std();
}

double z_bound(double alpha, int tests) {
  const double target = alpha / std::max(tests, 1);  // two-sided tail per test
  double lo = 0, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (std::erfc(mid / std::sqrt(2.0)) > target ? lo : hi) = mid;
  }
  return hi;
}

std::string to_string(TieForm form) {
  switch (form) {
    case TieForm::kOneTensor: return "one tensor";
    case TieForm::kEqualCopies: return "equal copies";
    case TieForm::kDifferent: return "different";
    case TieForm::kHeadAbsent: return "absent";
  }
  return "?";
}

InitAudit audit_init(const std::map<std::string, torch::Tensor>& tensors,
                     const InitAuditOptions& options) {
  if (!tensors.count("transformer.wte.weight")) {
    throw ConfigError("init audit: the tensors hold no transformer.wte.weight");
  }
  InitAudit a;
  std::map<std::string, Group> groups = group_by_family(tensors, a);
  const torch::Tensor& wte = tensors.at("transformer.wte.weight");
  const auto wpe = tensors.find("transformer.wpe.weight");
  a.shapes = fmt::format("{} layers, wte {}", a.n_layer, fmt::join(wte.sizes(), "x"));
  if (wpe != tensors.end()) a.shapes += fmt::format(", wpe {}", fmt::join(wpe->second.sizes(), "x"));
  audit_tie(tensors, options, a);
  if (groups.count("LayerNorm gains")) judge_moved(groups["LayerNorm gains"], a);
  if (!a.initialized) return a;
  const double residual = audited_residual_std(options, a.n_layer);
  for (const std::string family : {"wte", "wpe", "attn.c_attn.weight", "attn.c_proj.weight",
                                   "mlp.c_fc.weight", "mlp.c_proj.weight"}) {
    if (!groups.count(family)) continue;
    const Group& g = groups[family];
    const bool is_residual = ends_with(family, "c_proj.weight");
    if (is_residual && residual == 0) {
      a.families.push_back(detail::audit_constant(family, g, 0.0, a.findings));
      continue;
    }
    double sigma = is_residual ? residual : options.std();
    if (family == "wpe" && options.wpe_std()) {
      sigma = *options.wpe_std();
    } else if (family == "wpe") {  // either published choice, the nearer one
      const double s = detail::moments(g.members[0].second).std();
      sigma = std::abs(std::log(s / 0.02)) < std::abs(std::log(s / 0.01)) ? 0.02 : 0.01;
    }
    a.families.push_back(detail::audit_drawn(
        family, g, sigma, detail::candidates(family, options, a.n_layer), options, a.findings));
  }
  for (const auto& [family, value] : {std::pair<std::string, double>{"LayerNorm gains", 1.0},
                                      {"LayerNorm biases", 0.0}, {"Linear biases", 0.0}}) {
    if (!groups.count(family)) continue;
    a.families.push_back(detail::audit_constant(family, groups[family], value, a.findings));
  }
  return a;
}

InitAudit audit_init(const GPTImpl& model, const InitAuditOptions& options) {
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& item : model.named_parameters()) tensors.emplace(item.key(), item.value());
  tensors["lm_head.weight"] = model.lm_head->weight;
  return audit_init(tensors, options);
}

}  // namespace gpt2
