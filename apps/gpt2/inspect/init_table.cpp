#include "apps/gpt2/inspect/init_table.h"

#include <algorithm>
#include <cmath>

namespace gpt2::app {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

struct Expectation {
  std::string group;
  double mean, std;
};

// The name oracle: GPT-2 paper 2.3 and nanoGPT's _init_weights, by name.
Expectation expect(const std::string& name, const GPTConfig& c) {
  const bool norm = name.find(".ln_") != std::string::npos;
  if (norm && ends_with(name, ".weight")) return {"LayerNorm weights", 1.0, 0.0};
  if (norm && ends_with(name, ".bias")) return {"LayerNorm biases", 0.0, 0.0};
  if (ends_with(name, ".bias")) return {"Linear biases", 0.0, 0.0};
  if (name == "transformer.wte.weight") return {"wte = lm_head", 0.0, c.init().std()};
  if (name == "transformer.wpe.weight") return {"wpe", 0.0, c.init().wpe_std()};
  for (const char* leaf : {"attn.c_proj.weight", "mlp.c_proj.weight"}) {
    if (ends_with(name, leaf)) return {leaf, 0.0, c.residual_std()};
  }
  for (const char* leaf : {"attn.c_attn.weight", "mlp.c_fc.weight"}) {
    if (ends_with(name, leaf)) return {leaf, 0.0, c.init().std()};
  }
  return {"other: " + name, 0.0, 0.0};
}

}  // namespace

std::vector<InitRow> init_table(const GPTImpl& model) {
  torch::NoGradGuard no_grad;
  std::vector<InitRow> rows;
  std::vector<std::pair<double, double>> sums;  // per row: sum, sum of squares
  for (const auto& item : model.named_unique_parameters()) {
    const Expectation e = expect(item.key(), model.config);
    auto found = std::find_if(rows.begin(), rows.end(),
                              [&](const InitRow& r) { return r.group == e.group; });
    if (found == rows.end()) {
      InitRow row;
      row.group = e.group;
      row.expected_mean = e.mean;
      row.expected_std = e.std;
      row.ok = true;
      rows.push_back(row);
      sums.emplace_back(0.0, 0.0);
      found = rows.end() - 1;
    }
    InitRow& row = *found;
    const torch::Tensor& t = item.value();
    row.tensors += 1;
    row.elements += t.numel();
    auto& [sum, sum_sq] = sums[found - rows.begin()];
    sum += t.sum(torch::kDouble).item<double>();
    sum_sq += t.square().sum(torch::kDouble).item<double>();
    if (row.expected_std > 0) {
      const double n = static_cast<double>(t.numel());
      const double tolerance = std::max(0.01, 6.0 / std::sqrt(2.0 * n));
      const double err = std::abs(t.std().item<double>() / row.expected_std - 1.0);
      row.tolerance = std::max(row.tolerance, tolerance);
      row.worst = std::max(row.worst, err);
      row.ok = row.ok && err <= tolerance;
    } else {
      const double err = (t - row.expected_mean).abs().max().item<double>();
      row.worst = std::max(row.worst, err);
      row.ok = row.ok && err == 0.0 && row.group.rfind("other", 0) != 0;
    }
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const double n = static_cast<double>(rows[i].elements);
    const auto [sum, sum_sq] = sums[i];
    rows[i].measured_std = n > 1 ? std::sqrt(std::max(0.0, (sum_sq - sum * sum / n) / (n - 1))) : 0.0;
  }
  return rows;
}

}  // namespace gpt2::app
