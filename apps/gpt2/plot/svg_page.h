#pragma once
// One PLplot SVG page, set up the same way for every picture the command
// draws (loss curves, the init study).

#include <functional>
#include <string>
#include <vector>

namespace gpt2::app {

/// A colour of PLplot's cmap0.
struct Rgb {
  int r, g, b;
};

/// Draws a picture into `path` (replaced atomically, see write_atomically):
/// an SVG page of `geometry` ("900x560") whose cmap0 is 0 white background,
/// 1 dark ink, then `series` as 2, 3, ...; `draw` runs between plinit and
/// plend with the ink selected. Throws FileError when `path` cannot be
/// written.
void draw_svg(const std::string& path, const char* geometry, const std::vector<Rgb>& series,
              const std::function<void()>& draw);

/// Labels the left axis of the current viewport, whose y runs over log10
/// values from `lo` to `hi`, at 1, 2, 3, 5 and 7 of each decade: PLplot
/// labels a log axis at powers of ten only, and a range inside one decade
/// would show none. Call inside draw_svg after plwind.
void label_log_y(double lo, double hi);

/// One entry of a legend of lines.
struct LegendLine {
  std::string text;
  /// cmap0 index and PLplot line style (1 solid .. 8).
  int color, style;
};

/// Draws a boxed legend of `lines` (width 2) on the current viewport at
/// `position` (PL_POSITION_* flags), offset by (x, y), each line's sample
/// `plot_width` wide, all normalised viewport units. Call inside draw_svg.
void draw_line_legend(const std::vector<LegendLine>& lines, int position, double x, double y,
                      double plot_width);

}  // namespace gpt2::app
