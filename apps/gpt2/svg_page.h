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

}  // namespace gpt2::app
