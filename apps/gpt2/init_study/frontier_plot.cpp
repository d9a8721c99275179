#include "apps/gpt2/init_study/frontier_plot.h"

#include <fmt/format.h>
#include <plplot.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "apps/gpt2/plot/svg_page.h"

namespace gpt2::app {
namespace {

constexpr PLINT kInk = 1;  // draw_svg's cmap0: 0 background, 1 ink, then the schemes
constexpr PLINT kCircle = 4, kCross = 5;  // plpoin's glyph codes

void draw_title(const std::string& title, const std::string& subtitle) {
  plcol0(kInk);
  plvpor(0, 1, 0, 1);
  plwind(0, 1, 0, 1);
  plschr(0, 1.0);
  plmtex("t", -1.5, 0.5, 0.5, title.c_str());
  plschr(0, 0.7);
  plmtex("t", -3.6, 0.5, 0.5, subtitle.c_str());
}

void draw_scheme_legend() {
  std::vector<LegendLine> legend;
  for (ResidualScale s : kStudySchemes) legend.push_back({scheme_label(s), scheme_color(s), 1});
  draw_line_legend(legend, PL_POSITION_RIGHT | PL_POSITION_INSIDE, 0.01, 0.0, 0.04);
}

// Panels side by side between `left` and `right` (page fractions), `gap` apart.
void panel_viewport(size_t i, size_t panels, double left, double right, double gap) {
  const double width = (right - left - gap * static_cast<double>(panels - 1)) / panels;
  const double x0 = left + static_cast<double>(i) * (width + gap);
  plvpor(x0, x0 + width, 0.13, 0.76);  // below the title, subtitle and panel titles
}

}  // namespace

void plot_frontier_loss(const std::vector<FrontierPoint>& points, const std::string& path,
                        const std::string& subtitle) {
  std::set<int64_t> depths;
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const FrontierPoint& p : points) {
    depths.insert(p.depth);
    x_lo = std::min(x_lo, std::log10(p.lr)), x_hi = std::max(x_hi, std::log10(p.lr));
    y_lo = std::min(y_lo, p.lo), y_hi = std::max(y_hi, p.hi);
  }
  if (points.empty()) x_lo = -4, x_hi = -1, y_lo = 0, y_hi = 1;
  const double pad = std::max(0.04 * (y_hi - y_lo), 0.02);
  const size_t panels = std::max<size_t>(1, depths.size());
  // Margins: 110 px for the y axis's numbers and label, 300 for the legend.
  const double page = 410 + 340 * static_cast<double>(panels);
  const std::string geometry = fmt::format("{}x560", page);
  draw_svg(path, geometry.c_str(), scheme_colors(), [&] {
    pladv(0);
    plschr(0, 0.8);
    size_t i = 0;
    for (int64_t depth : depths) {
      panel_viewport(i, panels, 110 / page, 1 - 300 / page, 30 / page);
      plwind(x_lo - 0.25, x_hi + 0.25, y_lo - pad, y_hi + pad);
      plcol0(kInk);
      plwidth(1);
      pllsty(1);
      plbox("bcgnstl", 1, 0, i == 0 ? "bcgnstv" : "bcgst", 0, 0);
      pllab("peak learning rate", i == 0 ? "final val loss (clipped at init)" : "",
            fmt::format("{} blocks", depth).c_str());
      for (ResidualScale scheme : kStudySchemes) {
        std::vector<PLFLT> x, mean, band_x, band_y, cross_x, cross_y, hi;
        for (const FrontierPoint& p : points) {  // lr ascending
          if (p.scheme != scheme || p.depth != depth) continue;
          x.push_back(std::log10(p.lr));
          mean.push_back(p.mean);
          band_y.push_back(p.lo);
          hi.push_back(p.hi);
          if (p.diverged > 0) cross_x.push_back(x.back()), cross_y.push_back(p.mean);
        }
        const size_t n = x.size();
        if (n == 0) continue;
        // The band: the lowest seed left to right, then the highest back.
        band_x = x;
        band_x.insert(band_x.end(), x.rbegin(), x.rend());
        band_y.insert(band_y.end(), hi.rbegin(), hi.rend());
        const PLINT color = scheme_color(scheme);
        const Rgb rgb = scheme_colors()[static_cast<size_t>(color - 2)];
        plscol0a(color, rgb.r, rgb.g, rgb.b, 0.22);
        plcol0(color);
        if (n > 1) plfill(static_cast<PLINT>(band_x.size()), band_x.data(), band_y.data());
        plscol0a(color, rgb.r, rgb.g, rgb.b, 1.0);
        plcol0(color);
        plwidth(2);
        plline(static_cast<PLINT>(n), x.data(), mean.data());
        plssym(0, 0.7);
        plpoin(static_cast<PLINT>(n), x.data(), mean.data(), kCircle);
        plssym(0, 1.4);
        plpoin(static_cast<PLINT>(cross_x.size()), cross_x.data(), cross_y.data(), kCross);
      }
      ++i;
    }
    draw_title("Final val loss against learning rate under each residual scheme",
               subtitle + "; line: mean over seeds, band: their range, x: a seed diverged");
    draw_scheme_legend();
  });
}

void plot_frontier_lrs(const std::vector<FrontierSummary>& rows, const std::string& path,
                       const std::string& subtitle) {
  std::set<int64_t> depths;
  double y_lo = INFINITY, y_hi = -INFINITY;
  for (const FrontierSummary& s : rows) {
    depths.insert(s.depth);
    for (double lr : {s.best_lr, s.largest_stable_lr}) {
      if (lr > 0) y_lo = std::min(y_lo, std::log10(lr)), y_hi = std::max(y_hi, std::log10(lr));
    }
  }
  if (!std::isfinite(y_lo)) y_lo = -4, y_hi = -1;
  const double x_lo = depths.empty() ? 0 : std::log2(static_cast<double>(*depths.begin()));
  const double x_hi = depths.empty() ? 1 : std::log2(static_cast<double>(*depths.rbegin()));
  const double page = 1250;
  draw_svg(path, "1250x560", scheme_colors(), [&] {
    pladv(0);
    plschr(0, 0.8);
    const char* titles[] = {"largest stable learning rate", "best learning rate"};
    for (size_t panel = 0; panel < 2; ++panel) {
      panel_viewport(panel, 2, 80 / page, 1 - 250 / page, 60 / page);
      plwind(x_lo - 0.4, x_hi + 0.4, y_lo - 0.35, y_hi + 0.35);
      plcol0(kInk);
      plwidth(1);
      pllsty(1);
      plbox("bcst", 0, 0, "bcgnstvl", 1, 0);
      for (int64_t d : depths) {  // the depths themselves as x labels
        const double at = (std::log2(static_cast<double>(d)) - (x_lo - 0.4)) / (x_hi - x_lo + 0.8);
        plmtex("b", 1.5, at, 0.5, std::to_string(d).c_str());
      }
      pllab("", panel == 0 ? "peak learning rate" : "", titles[panel]);
      plmtex("b", 3.0, 0.5, 0.5, "blocks (log scale)");
      for (ResidualScale scheme : kStudySchemes) {
        // Schemes apart by a little in x, so equal values stay visible.
        const double shift = 0.05 * (static_cast<double>(scheme_color(scheme)) - 3.5);
        std::vector<PLFLT> x, y;
        for (const FrontierSummary& s : rows) {
          const double lr = panel == 0 ? s.largest_stable_lr : s.best_lr;
          if (s.scheme != scheme || lr <= 0) continue;
          x.push_back(std::log2(static_cast<double>(s.depth)) + shift);
          y.push_back(std::log10(lr));
        }
        plcol0(scheme_color(scheme));
        plwidth(2);
        plline(static_cast<PLINT>(x.size()), x.data(), y.data());
        plssym(0, 0.9);
        plpoin(static_cast<PLINT>(x.size()), x.data(), y.data(), kCircle);
      }
    }
    draw_title("Learning rates against depth under each residual scheme",
               subtitle + "; stable: no seed diverged at it or any smaller rate");
    draw_scheme_legend();
  });
}

}  // namespace gpt2::app
