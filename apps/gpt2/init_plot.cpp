#include "apps/gpt2/init_plot.h"

#include <fmt/format.h>
#include <plplot.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "apps/gpt2/svg_page.h"

namespace gpt2::app {
namespace {

// cmap0 entries: background, ink, then one colour per scheme.
enum Color : PLINT { kBackground = 0, kInk = 1, kTwoN = 2, kN = 3, kNone = 4 };

PLINT color_of(ResidualScale s) {
  switch (s) {
    case ResidualScale::kTwoPerBlock: return kTwoN;
    case ResidualScale::kOnePerBlock: return kN;
    case ResidualScale::kNone: return kNone;
  }
  return kInk;
}

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
  // Series colours: kTwoN, kN, kNone.
  draw_svg(path, "1100x560", {{31, 90, 180}, {40, 150, 60}, {220, 60, 30}}, [&] {
    // The plot on the left three quarters, the legend to its right; y is
    // log10 of the value, labelled as powers of ten.
    pladv(0);
    plvpor(0.1, 0.74, 0.11, 0.9);
    const double lo = std::floor(y_min * 10) / 10 - 0.05, hi = std::ceil(y_max * 10) / 10 + 0.05;
    plwind(0, x_max + 1, lo, hi);
    plbox("bcgnst", 0, 0, "bcgt", 0, 0);
    // PLplot labels a log axis at powers of ten only; a range inside one
    // decade would show none, so 1, 2, 3, 5 and 7 of each are labelled by hand.
    for (double decade = std::pow(10.0, std::floor(lo)); decade <= std::pow(10.0, hi); decade *= 10) {
      for (double v : {decade, 2 * decade, 3 * decade, 5 * decade, 7 * decade}) {
        const double y = std::log10(v);
        if (y < lo || y > hi) continue;
        plmtex("lv", 0.8, (y - lo) / (hi - lo), 1.0, fmt::format("{:g}", v).c_str());
      }
    }
    pllab("block", what == InitQuantity::kResidualStd ? "std of the residual stream after the block"
                                                      : "gradient norm of the block's parameters",
          title.c_str());
    std::vector<std::string> labels;
    std::vector<PLINT> opts, colors, styles;
    std::vector<PLFLT> widths;
    for (const InitProfile& p : profiles) {
      const auto& v = values_of(p, what);
      std::vector<PLFLT> x, y;
      for (size_t i = 0; i < v.size(); ++i) {
        x.push_back(static_cast<PLFLT>(i + 1));
        y.push_back(std::log10(v[i]));
      }
      plcol0(color_of(p.scheme));
      pllsty(dash[p.n_layer]);
      plwidth(2);
      plline(static_cast<PLINT>(x.size()), x.data(), y.data());
      labels.push_back(fmt::format("N = {}, {} blocks", to_string(p.scheme) == "2n"  ? "2L"
                                                        : to_string(p.scheme) == "n" ? "L"
                                                                                     : "1 (none)",
                                   p.n_layer));
      opts.push_back(PL_LEGEND_LINE);
      colors.push_back(color_of(p.scheme));
      styles.push_back(dash[p.n_layer]);
      widths.push_back(2);
    }
    pllsty(1);
    plwidth(1);
    std::vector<const char*> texts;
    for (const auto& l : labels) texts.push_back(l.c_str());
    const PLINT n = static_cast<PLINT>(texts.size());
    std::vector<PLINT> ink(n, kInk);
    PLFLT w = 0, h = 0;
    pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
             PL_POSITION_RIGHT | PL_POSITION_OUTSIDE, 0.02, 0.0, 0.06, kBackground, kInk, 1, 0,
             0, n, opts.data(), 0.6, 0.6, 1.6, 0.0, ink.data(), texts.data(), nullptr, nullptr,
             nullptr, nullptr, colors.data(), styles.data(), widths.data(), nullptr, nullptr,
             nullptr, nullptr);
  });
}

}  // namespace gpt2::app
