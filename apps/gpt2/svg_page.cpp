#include "apps/gpt2/svg_page.h"

#include <plplot.h>

#include "gpt2/io/atomic_file.h"

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

}  // namespace gpt2::app
