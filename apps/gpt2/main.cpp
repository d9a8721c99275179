// The `gpt2` command: one executable, one subcommand per task.

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <iostream>

#include "apps/gpt2/convert_command.h"
#include "apps/gpt2/export_command.h"
#include "apps/gpt2/inspect.h"
#include "gpt2/error.h"

int main(int argc, char** argv) {
  CLI::App app{"gpt2: GPT-2 in LibTorch, laid out like nanoGPT"};
  app.require_subcommand(1);
  int rc = 0;
  gpt2::app::add_inspect_command(app, &rc);
  gpt2::app::add_export_command(app, &rc);
  gpt2::app::add_convert_command(app, &rc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const gpt2::Error& e) {
    fmt::print(stderr, "gpt2: error: {}\n", e.what());
    return 2;
  } catch (const c10::Error& e) {
    fmt::print(stderr, "gpt2: torch error: {}\n", e.what_without_backtrace());
    return 2;
  }
  return rc;
}
