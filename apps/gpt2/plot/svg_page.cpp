#include "apps/gpt2/plot/svg_page.h"

#include <fmt/format.h>
#include <plplot.h>

#include <cmath>

#include "gpt2/file/atomic_file.h"

namespace gpt2::app {

void draw_svg(const std::string& path, const char* geometry, const std::vector<Rgb>& series,
              const std::function<void()>& draw) {
  write_atomically(path, [&](const std::string& tmp) {
    plsdev("svg");
    plsfnam(tmp.c_str());
    plsetopt("geometry", geometry);
    plscmap0n(static_cast<PLINT>(2 + series.size()));
    plscol0(0, 255, 255, 255);
    plscol0(1, 40, 40, 40);
    for (size_t i = 0; i < series.size(); ++i) {
      plscol0(static_cast<PLINT>(2 + i), series[i].r, series[i].g, series[i].b);
    }
    plinit();
    plcol0(1);
    draw();
    plend();
  });
}

void label_log_y(double lo, double hi) {
  for (double decade = std::pow(10.0, std::floor(lo)); decade <= std::pow(10.0, hi); decade *= 10) {
    for (double v : {decade, 2 * decade, 3 * decade, 5 * decade, 7 * decade}) {
      const double y = std::log10(v);
      if (y < lo || y > hi) continue;
      plmtex("lv", 0.8, (y - lo) / (hi - lo), 1.0, fmt::format("{:g}", v).c_str());
    }
  }
}

void draw_line_legend(const std::vector<LegendLine>& lines, int position, double x, double y,
                      double plot_width) {
  const PLINT n = static_cast<PLINT>(lines.size());
  std::vector<const char*> texts;
  std::vector<PLINT> opts(n, PL_LEGEND_LINE), ink(n, 1), colors, styles;
  std::vector<PLFLT> widths(n, 2);
  for (const LegendLine& l : lines) {
    texts.push_back(l.text.c_str());
    colors.push_back(l.color);
    styles.push_back(l.style);
  }
  PLFLT w = 0, h = 0;
  pllsty(1);
  plwidth(1);
  pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX, position, x, y, plot_width,
           0, 1, 1, 0, 0, n, opts.data(), 0.6, 0.6, 1.6, 0.0, ink.data(), texts.data(), nullptr,
           nullptr, nullptr, nullptr, colors.data(), styles.data(), widths.data(), nullptr,
           nullptr, nullptr, nullptr);
}

}  // namespace gpt2::app
