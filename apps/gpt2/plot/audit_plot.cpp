#include "apps/gpt2/plot/audit_plot.h"

#include <fmt/format.h>
#include <plplot.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "apps/gpt2/plot/svg_page.h"

namespace gpt2::app {
namespace {

// The weight families drawn per layer, and the range of their log10 std.
std::vector<const FamilyAudit*> drawn_families(const InitAudit& audit, double* lo, double* hi) {
  std::vector<const FamilyAudit*> drawn;
  *lo = INFINITY, *hi = -INFINITY;
  for (const FamilyAudit& f : audit.families) {
    if (f.layer_std.empty() || f.family.find(".weight") == std::string::npos) continue;
    drawn.push_back(&f);
    std::vector<double> values = f.layer_std;
    values.push_back(f.expected_std);
    for (double v : values) {
      if (v > 0) *lo = std::min(*lo, std::log10(v)), *hi = std::max(*hi, std::log10(v));
    }
  }
  if (!std::isfinite(*lo)) *lo = -3, *hi = -1;  // every std 0 (the zero scheme)
  *lo = std::floor(*lo * 10) / 10 - 0.1, *hi = std::ceil(*hi * 10) / 10 + 0.1;
  return drawn;
}

}  // namespace

void plot_init_audit(const InitAudit& audit, const std::string& path, const std::string& title) {
  double lo = 0, hi = 0;
  const std::vector<const FamilyAudit*> drawn = drawn_families(audit, &lo, &hi);
  const std::vector<Rgb> colors = {{31, 119, 180}, {214, 39, 40}, {44, 160, 44}, {148, 103, 189}};
  const double right = static_cast<double>(audit.n_layer) - 0.5;
  draw_svg(path, "1000x560", colors, [&] {
    pladv(0);
    plvpor(0.1, 0.7, 0.11, 0.9);
    plwind(-0.5, right, lo, hi);
    plbox("bcgnst", 0, 0, "bct", 0, 0);
    label_log_y(lo, hi);
    pllab("layer", "std of the weights", title.c_str());
    std::vector<LegendLine> legend;
    std::map<double, std::string> rules;  // the rule's std -> the families it is for
    for (size_t i = 0; i < drawn.size(); ++i) {
      const FamilyAudit& f = *drawn[i];
      const PLINT color = static_cast<PLINT>(2 + i % colors.size());
      std::vector<PLFLT> x, y;
      for (size_t l = 0; l < f.layer_std.size(); ++l) {
        if (f.layer_std[l] <= 0) continue;
        x.push_back(static_cast<PLFLT>(l));
        y.push_back(std::log10(f.layer_std[l]));
      }
      plcol0(color);
      plwidth(2);
      pllsty(1);
      plline(static_cast<PLINT>(x.size()), x.data(), y.data());
      plpoin(static_cast<PLINT>(x.size()), x.data(), y.data(), 17);
      legend.push_back({f.family, color, 1});
      if (f.expected_std > 0) {
        std::string& names = rules[f.expected_std];
        names += (names.empty() ? "" : ", ") + f.family.substr(0, f.family.size() - 7);
      }
    }
    plcol0(1);
    pllsty(2);
    plwidth(1);
    for (const auto& [std, names] : rules) {
      const PLFLT rx[2] = {-0.5, right}, ry[2] = {std::log10(std), std::log10(std)};
      plline(2, rx, ry);
      legend.push_back({fmt::format("rule {:.5f}: {}", std, names), 1, 2});
    }
    draw_line_legend(legend, PL_POSITION_RIGHT | PL_POSITION_OUTSIDE, 0.02, 0.0, 0.06);
  });
}

}  // namespace gpt2::app
