#include "apps/gpt2/init_study/train_study_plot.h"

#include <fmt/format.h>
#include <plplot.h>

#include <algorithm>
#include <cmath>

#include "apps/gpt2/init_study/study_types.h"
#include "apps/gpt2/plot/loss_plot.h"
#include "apps/gpt2/plot/svg_page.h"

namespace gpt2::app {
namespace {

constexpr PLINT kInk = 1;  // draw_svg's cmap0: 0 background, 1 ink, then the schemes
// plpoin's glyph codes.
constexpr PLINT kCircle = 4, kCross = 5;

// A run's finite training losses against their step, smoothed, and its val
// evaluations.
struct Curves {
  std::vector<PLFLT> step, loss, val_step, val;
};

Curves curves_of(const StudyRun& r) {
  Curves c;
  std::vector<double> raw;
  for (size_t i = 0; i < r.train_loss.size(); ++i) {
    if (!std::isfinite(r.train_loss[i])) continue;
    c.step.push_back(static_cast<PLFLT>(i + 1));
    raw.push_back(r.train_loss[i]);
  }
  c.loss = moving_average(raw, std::max<size_t>(1, r.train_loss.size() / 25));
  for (const auto& [step, loss] : r.val) {
    if (!std::isfinite(loss)) continue;
    c.val_step.push_back(static_cast<PLFLT>(step));
    c.val.push_back(loss);
  }
  return c;
}

}  // namespace

void plot_study_runs(const std::vector<StudyRun>& runs, const std::string& path,
                     const std::string& subtitle) {
  std::vector<double> lrs;
  std::vector<Curves> curves;
  double x_max = 1, y_min = INFINITY, y_max = -INFINITY, first_max = -INFINITY;
  for (const StudyRun& r : runs) {
    if (std::find(lrs.begin(), lrs.end(), r.lr) == lrs.end()) lrs.push_back(r.lr);
    curves.push_back(curves_of(r));
    const Curves& c = curves.back();
    x_max = std::max(x_max, static_cast<double>(r.steps));
    for (const auto* v : {&c.loss, &c.val}) {
      for (double y : *v) y_min = std::min(y_min, y), y_max = std::max(y_max, y);
    }
    if (!c.val.empty()) first_max = std::max(first_max, c.val.front());
  }
  if (!std::isfinite(y_min)) y_min = 0, y_max = 1;
  // A spike far above the loss at init would flatten every other curve: the
  // window stops at 1.5 x the highest loss at init and clips what is above.
  if (std::isfinite(first_max)) y_max = std::min(y_max, 1.5 * first_max);
  const double pad = std::max(0.04 * (y_max - y_min), 0.02);
  const size_t panels = std::max<size_t>(1, lrs.size());
  const double page_width = 400 + 440 * static_cast<double>(panels);
  const std::string geometry = fmt::format("{}x600", page_width);
  draw_svg(path, geometry.c_str(), scheme_colors(), [&] {
    pladv(0);
    // Panels side by side after 100 px for the y labels, 300 px on the
    // right for the legend.
    const double left = 100 / page_width, right = 1 - 300 / page_width, gap = 40 / page_width;
    plschr(0, 0.8);
    const double width = (right - left - gap * static_cast<double>(panels - 1)) / panels;
    for (size_t p = 0; p < panels; ++p) {
      const double x0 = left + static_cast<double>(p) * (width + gap);
      plvpor(x0, x0 + width, 0.14, 0.78);
      plwind(0, x_max, y_min - pad, y_max + pad);
      plcol0(kInk);
      plwidth(1);
      plbox("bcgnst", 0, 0, p == 0 ? "bcgnstv" : "bcgst", 0, 0);
      pllab("step", p == 0 ? "loss (nats)" : "",
            lrs.empty() ? "" : fmt::format("peak lr {:g}", lrs[p]).c_str());
      for (size_t i = 0; i < runs.size(); ++i) {
        if (lrs.empty() || runs[i].lr != lrs[p]) continue;
        const Curves& c = curves[i];
        plcol0(scheme_color(runs[i].scheme));
        plwidth(2);
        plline(static_cast<PLINT>(c.step.size()), c.step.data(), c.loss.data());
        plssym(0, 0.8);
        plpoin(static_cast<PLINT>(c.val.size()), c.val_step.data(), c.val.data(), kCircle);
        if (runs[i].diverged && !c.step.empty()) {
          PLFLT x = c.step.back(), y = std::min(c.loss.back(), y_max);
          plssym(0, 1.6);
          plpoin(1, &x, &y, kCross);
          plptex(x, y, 1, 0, 1.1, "diverged");
        }
      }
    }
    plcol0(kInk);
    plwidth(1);
    plvpor(0, 1, 0, 1);
    plwind(0, 1, 0, 1);
    plschr(0, 1.0);
    plmtex("t", -1.5, 0.5, 0.5, "Training one deep, narrow model under each residual scheme");
    plschr(0, 0.7);
    plmtex("t", -4.0, 0.5, 0.5,
           fmt::format("{}; lines: train loss, smoothed; circles: val loss", subtitle).c_str());
    std::vector<LegendLine> legend;
    for (ResidualScale s : kStudySchemes) legend.push_back({scheme_label(s), scheme_color(s), 1});
    draw_line_legend(legend, PL_POSITION_RIGHT | PL_POSITION_INSIDE, 0.02, 0.0, 0.05);
  });
}

}  // namespace gpt2::app
