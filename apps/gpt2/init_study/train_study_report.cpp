#include "apps/gpt2/init_study/train_study_report.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "apps/gpt2/init_study/study_types.h"
#include "apps/gpt2/init_study/train_study_plot.h"
#include "apps/gpt2/common/progress.h"
#include "gpt2/file/atomic_file.h"

namespace gpt2::app {
namespace {

double first_loss(const StudyRun& run) {
  return run.train_loss.empty() ? std::nan("") : run.train_loss.front();
}

const char* end_of(const StudyRun& run) { return run.diverged ? "diverged" : "finished"; }

// A loss in a CSV cell: empty when it is not finite, as the training log does.
std::string cell(double loss) { return std::isfinite(loss) ? fmt::format("{:.6g}", loss) : ""; }

void write_csv(const std::string& path, const std::string& text, const char* what,
               std::ostream& out) {
  write_atomically(path, [&text](std::ostream& file) { file << text; });
  fmt::print(out, "wrote     {} ({})\n", path, what);
}

}  // namespace

std::pair<int64_t, double> last_val(const StudyRun& run) {
  return run.val.empty() ? std::pair<int64_t, double>{-1, std::nan("")} : run.val.back();
}

void print_study_table(const std::vector<StudyRun>& runs, std::ostream& out) {
  fmt::print(out, "  {:<13} {:>8} {:>9} {:>6} {:>8} {:>12} {:>9} {:>8} {:>7}\n", "scheme", "lr",
             "end", "steps", "skipped", "loss step 1", "val loss", "at step", "time");
  for (const StudyRun& r : runs) {
    const auto [val_step, val] = last_val(r);
    fmt::print(out, "  {:<13} {:>8g} {:>9} {:>6} {:>8} {:>12.4f} {:>9.4f} {:>8} {:>7}\n",
               scheme_label(r.scheme), r.lr, end_of(r), r.steps, r.skipped,
               first_loss(r), val, val_step,
               format_duration(r.seconds));
  }
}

void write_study_files(const std::vector<StudyRun>& runs, const TrainStudyFlags& f,
                       const GPTConfig& shape, std::ostream& out) {
  const std::filesystem::path dir(f.out);
  std::ostringstream summary, curves;
  summary << "scheme,lr,end,steps,skipped,first_loss,val_loss,val_step,seconds\n";
  curves << "scheme,lr,step,split,loss\n";
  for (const StudyRun& r : runs) {
    const auto [val_step, val] = last_val(r);
    const std::string scheme = to_string(r.scheme);
    fmt::print(summary, "{},{:g},{},{},{},{},{},{},{:.1f}\n", scheme, r.lr, end_of(r), r.steps,
               r.skipped, cell(first_loss(r)),
               cell(val), val_step, r.seconds);
    for (size_t i = 0; i < r.train_loss.size(); ++i) {
      fmt::print(curves, "{},{:g},{},train,{}\n", scheme, r.lr, i + 1, cell(r.train_loss[i]));
    }
    for (const auto& [step, loss] : r.val) {
      fmt::print(curves, "{},{:g},{},val,{}\n", scheme, r.lr, step, cell(loss));
    }
  }
  write_csv((dir / "init_train.csv").string(), summary.str(), "one row per run", out);
  write_csv((dir / "init_train_curves.csv").string(), curves.str(),
            "one row per run and step or evaluation", out);
  const std::string picture = (dir / "init_train.svg").string();
  plot_study_runs(runs, picture,
                  fmt::format("{} blocks x n_embd {}, batch {} x {} chars, seed {}",
                              shape.n_layer(), shape.n_embd(), f.batch_size, shape.block_size(),
                              f.seed));
  fmt::print(out, "wrote     {}\n", picture);
}

}  // namespace gpt2::app
