#include "apps/gpt2/init_study/sweep_plot.h"

#include <fmt/format.h>
#include <plplot.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "apps/gpt2/plot/svg_page.h"

namespace gpt2::app {
namespace {

const std::vector<double>& values_of(const InitProfile& p, InitQuantity what) {
  return what == InitQuantity::kResidualStd ? p.residual_std : p.block_grad_norm;
}

}  // namespace

void plot_init_profiles(const std::vector<InitProfile>& profiles, InitQuantity what,
                        const std::string& path, const std::string& title) {
  double x_max = 1, y_min = INFINITY, y_max = -INFINITY;
  std::map<int64_t, PLINT> dash;  // depth -> PLplot line style 1..8
  for (const InitProfile& p : profiles) {
    x_max = std::max(x_max, static_cast<double>(p.n_layer));
    for (double v : values_of(p, what)) {
      y_min = std::min(y_min, std::log10(v));
      y_max = std::max(y_max, std::log10(v));
    }
    // Solid, long dash, short dash, long-short: the most distinct of PLplot's 8.
    static constexpr PLINT kStyles[] = {1, 3, 2, 4};
    if (!dash.count(p.n_layer)) {
      const PLINT style = kStyles[dash.size() % 4];
      dash[p.n_layer] = style;
    }
  }
  draw_svg(path, "1100x560", scheme_colors(), [&] {
    // The plot on the left three quarters, the legend to its right; y is
    // log10 of the value, labelled as powers of ten.
    pladv(0);
    plvpor(0.1, 0.74, 0.11, 0.9);
    const double lo = std::floor(y_min * 10) / 10 - 0.05, hi = std::ceil(y_max * 10) / 10 + 0.05;
    plwind(0, x_max + 1, lo, hi);
    plbox("bcgnst", 0, 0, "bcgt", 0, 0);
    label_log_y(lo, hi);
    pllab("block", what == InitQuantity::kResidualStd ? "std of the residual stream after the block"
                                                      : "gradient norm of the block's parameters",
          title.c_str());
    std::vector<LegendLine> legend;
    for (const InitProfile& p : profiles) {
      const auto& v = values_of(p, what);
      std::vector<PLFLT> x, y;
      for (size_t i = 0; i < v.size(); ++i) {
        x.push_back(static_cast<PLFLT>(i + 1));
        y.push_back(std::log10(v[i]));
      }
      plcol0(scheme_color(p.scheme));
      pllsty(dash[p.n_layer]);
      plwidth(2);
      plline(static_cast<PLINT>(x.size()), x.data(), y.data());
      legend.push_back({fmt::format("{}, {} blocks", scheme_label(p.scheme), p.n_layer),
                        scheme_color(p.scheme), dash[p.n_layer]});
    }
    draw_line_legend(legend, PL_POSITION_RIGHT | PL_POSITION_OUTSIDE, 0.02, 0.0, 0.06);
  });
}

}  // namespace gpt2::app
