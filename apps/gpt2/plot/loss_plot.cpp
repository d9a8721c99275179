#include "apps/gpt2/plot/loss_plot.h"

#include <fmt/format.h>
#include <plplot.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "apps/gpt2/plot/svg_page.h"
#include "gpt2/error.h"

namespace gpt2::app {
namespace {

// cmap0 entries this plot uses.
enum Color : PLINT { kBackground = 0, kInk = 1, kRaw = 2, kSmooth = 3, kVal = 4 };

struct Series {
  std::vector<PLFLT> x, y;
};

}  // namespace

std::vector<double> moving_average(const std::vector<double>& y, size_t window) {
  std::vector<double> prefix(y.size() + 1, 0.0);  // prefix[i]: the sum of y[0..i)
  for (size_t i = 0; i < y.size(); ++i) prefix[i + 1] = prefix[i] + y[i];
  std::vector<double> out(y.size());
  const size_t half = window / 2;
  for (size_t i = 0; i < y.size(); ++i) {
    const size_t lo = i >= half ? i - half : 0, hi = std::min(y.size(), i + half + 1);
    out[i] = (prefix[hi] - prefix[lo]) / static_cast<double>(hi - lo);
  }
  return out;
}

namespace {

// Every k-th point (and the last), at most about kMaxPoints: an SVG of a
// million-step log draws in a second and is still a curve at 900 pixels.
constexpr size_t kMaxPoints = 4000;

Series thinned(const std::vector<PLFLT>& x, const std::vector<PLFLT>& y) {
  const size_t k = std::max<size_t>(1, (x.size() + kMaxPoints - 1) / kMaxPoints);
  Series s;
  for (size_t i = 0; i < x.size(); i += k) {
    s.x.push_back(x[i]);
    s.y.push_back(y[i]);
  }
  if (!x.empty() && (x.size() - 1) % k != 0) {
    s.x.push_back(x.back());
    s.y.push_back(y.back());
  }
  return s;
}

}  // namespace

void plot_losses(const std::vector<LogRow>& rows, const std::string& path,
                 const std::string& title) {
  Series train, val;
  for (const LogRow& r : rows) {
    if (!std::isfinite(r.loss)) continue;
    if (std::fabs(r.loss) > kMaxDrawable || std::fabs(static_cast<double>(r.step)) > kMaxDrawable) {
      throw InputError(fmt::format("the log's {} row at step {} holds loss {}: past what the plot "
                                   "can draw (magnitudes up to {:g})", r.split, r.step, r.loss,
                                   kMaxDrawable));
    }
    Series& s = r.split == "val" ? val : train;
    if (r.split == "val" || r.split == "train") {
      s.x.push_back(static_cast<PLFLT>(r.step));
      s.y.push_back(r.loss);
    }
  }
  if (train.x.empty() && val.x.empty()) {
    throw InputError("the log has no finite train or val loss to plot");
  }
  double x_max = 1, y_min = INFINITY, y_max = -INFINITY;
  for (const Series* s : {&train, &val}) {
    for (size_t i = 0; i < s->x.size(); ++i) {
      x_max = std::max(x_max, s->x[i]);
      y_min = std::min(y_min, s->y[i]);
      y_max = std::max(y_max, s->y[i]);
    }
  }
  const double pad = std::max(0.05 * (y_max - y_min), 0.05);

  // Series colours: kRaw, kSmooth, kVal.
  draw_svg(path, "900x560", {{170, 200, 235}, {31, 90, 180}, {230, 110, 20}}, [&] {
    plenv(0, x_max, std::max(0.0, y_min - pad), y_max + pad, 0, 2);  // 2: grid
    pllab("step", "loss (cross entropy, nats)", title.c_str());
    PLINT n_entries = 0;
    PLINT opts[3], colors[3], styles[3] = {1, 1, 1}, symbol_colors[3], symbol_numbers[3] = {1, 1, 1};
    PLFLT widths[3] = {1, 2, 2}, scales[3] = {1, 1, 1};
    const char* texts[3];
    const char* symbols[3] = {"", "", "#(728)"};  // a filled circle
    auto entry = [&](const char* text, Color c, bool symbol) {
      opts[n_entries] = symbol ? (PL_LEGEND_LINE | PL_LEGEND_SYMBOL) : PL_LEGEND_LINE;
      colors[n_entries] = symbol_colors[n_entries] = c;
      texts[n_entries++] = text;
    };
    if (!train.x.empty()) {
      plcol0(kRaw);
      plwidth(1);
      const Series raw = thinned(train.x, train.y);
      plline(static_cast<PLINT>(raw.x.size()), raw.x.data(), raw.y.data());
      const Series s = thinned(train.x, moving_average(train.y, std::max<size_t>(1, train.y.size() / 25)));
      plcol0(kSmooth);
      plwidth(2);
      plline(static_cast<PLINT>(s.x.size()), s.x.data(), s.y.data());
      entry("train (per step)", kRaw, false);
      entry("train (smoothed)", kSmooth, false);
    }
    if (!val.x.empty()) {
      plcol0(kVal);
      plwidth(2);
      const Series v = thinned(val.x, val.y);
      plline(static_cast<PLINT>(v.x.size()), v.x.data(), v.y.data());
      plssym(0, 1.3);
      plstring(static_cast<PLINT>(v.x.size()), v.x.data(), v.y.data(), "#(728)");
      entry("val", kVal, true);
    }
    plwidth(1);
    PLFLT legend_w = 0, legend_h = 0;
    const PLINT ink[3] = {kInk, kInk, kInk};
    pllegend(&legend_w, &legend_h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
             PL_POSITION_RIGHT | PL_POSITION_TOP | PL_POSITION_INSIDE, 0.02, 0.02, 0.1,
             kBackground, kInk, 1, 0, 0, n_entries, opts, 1.0, 1.0, 2.0, 0.0, ink, texts,
             nullptr, nullptr, nullptr, nullptr, colors, styles, widths, symbol_colors, scales,
             symbol_numbers, symbols);
  });
}

}  // namespace gpt2::app
