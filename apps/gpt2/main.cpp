// The `gpt2` command's full program, one subcommand per task. bin/gpt2 is
// the launcher (launcher.cpp), which runs the commands that need no LibTorch
// itself and becomes this program (libexec/gpt2/gpt2-full) for the others.

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "apps/gpt2/bench/bench_command.h"
#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/convert_command.h"
#include "apps/gpt2/eval_command.h"
#include "apps/gpt2/export_command.h"
#include "apps/gpt2/generate_command.h"
#include "apps/gpt2/init_study/init_study_command.h"
#include "apps/gpt2/inspect/inspect_command.h"
#include "apps/gpt2/plot/plot_command.h"
#include "apps/gpt2/prepare_command.h"
#include "apps/gpt2/serve/serve_command.h"
#include "gpt2/runtime/runtime.h"
#include "apps/gpt2/train/train_command.h"
#include "apps/gpt2/tokenize_command.h"
#include "gpt2/error.h"

// Built with AddressSanitizer (GCC says so by __SANITIZE_ADDRESS__, clang by
// __has_feature): main returns, so that the leak check runs at exit.
#if defined(__SANITIZE_ADDRESS__)
#define GPT2_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPT2_UNDER_ASAN 1
#endif
#endif

int main(int argc, char** argv) {
  // Every usable core (OMP_NUM_THREADS when set) for torch's pool, OpenBLAS's
  // and gpt2's kernel threads, where the model's products run
  // (gpt2/ops/cpu/matmul.h).
  gpt2::set_compute_threads(gpt2::default_threads());
  CLI::App app{"gpt2: GPT-2 in LibTorch, laid out like nanoGPT"};
  app.require_subcommand(1);
  int rc = 0;
  gpt2::app::add_inspect_command(app, &rc);
  gpt2::app::add_export_command(app, &rc);
  gpt2::app::add_generate_command(app, &rc);
  gpt2::app::add_tokenize_command(app, &rc);
  gpt2::app::add_bench_command(app, &rc);
  gpt2::app::add_prepare_command(app, &rc);
  gpt2::app::add_train_command(app, &rc);
#ifdef GPT2_WITH_PLOT  // the commands that draw pictures (PLplot): apps/CMakeLists.txt
  gpt2::app::add_plot_command(app, &rc);
#endif
  gpt2::app::add_init_study_command(app, &rc);  // `sweep` only with PLplot
  gpt2::app::add_convert_command(app, &rc);
  gpt2::app::add_eval_command(app, &rc);
  gpt2::app::add_serve_command(app, &rc);
  const int code = gpt2::app::run_cli(app, argc, argv, rc, [](const std::exception& e) {
    const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
    return torch_error ? std::optional<std::string>(std::string("torch error: ") +
                                                     torch_error->what_without_backtrace())
                       : std::nullopt;
  });
#ifdef GPT2_UNDER_ASAN
  return code;
#else
  // Every file the command wrote is closed by now and standard output was
  // flushed and checked. What is left at exit is the destructors of
  // LibTorch's libraries and of the ~290 libraries Debian's libtorch_cpu
  // loads (OpenCV, FFmpeg, GDAL...): about 60 ms a command on the AMD EPYC,
  // skipped here.
  std::cout.flush();
  std::fflush(nullptr);
  std::_Exit(code);
#endif
}
