// The `gpt2` command: one executable, one subcommand per task.

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>
#include <cxxabi.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <typeinfo>
#include <vector>

#include "apps/gpt2/bench/bench_command.h"
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

namespace {

// "std::out_of_range" rather than "St12out_of_range".
std::string demangled(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                              std::free);
  return status == 0 && text ? text.get() : name;
}

// CLI11 takes the word after an option as its value even when that word is
// another flag, so `--n-layer --n-head 4` would end in "4 was not
// expected". Every option that takes a value refuses one that is a flag.
void refuse_flags_as_values(CLI::App& app) {
  const CLI::Validator not_a_flag(
      [](std::string& value) -> std::string {
        if (value.size() < 3 || value.compare(0, 2, "--") != 0) return {};
        return fmt::format("needs a value, but the next word is the flag '{}' (a file name "
                           "that starts with -- can be written ./{})", value, value);
      },
      "", "not a flag");
  for (CLI::Option* option : app.get_options()) {
    if (option->nonpositional() && option->get_expected_min() > 0) option->check(not_a_flag);
  }
  for (CLI::App* sub : app.get_subcommands({})) refuse_flags_as_values(*sub);
}

}  // namespace

int main(int argc, char** argv) {
  // All cores in torch's pool (OMP_NUM_THREADS when set): the model's matrix
  // products run there (gpt2/model/kernels/matmul.h), as do its elementwise ops.
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
  gpt2::app::add_plot_command(app, &rc);
  gpt2::app::add_init_study_command(app, &rc);
  gpt2::app::add_convert_command(app, &rc);
  gpt2::app::add_eval_command(app, &rc);
  gpt2::app::add_serve_command(app, &rc);
  refuse_flags_as_values(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty()) {
      // CLI11 would say only that the word was not expected.
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
      fmt::print(stderr, "gpt2: unknown command '{}'; the commands are {} (gpt2 --help)\n",
                 argv[1], fmt::join(names, ", "));
      return e.get_exit_code();
    }
    return app.exit(e);
  } catch (const gpt2::Error& e) {
    fmt::print(stderr, "gpt2: error: {}\n", e.what());
    return 2;
  } catch (const c10::Error& e) {
    fmt::print(stderr, "gpt2: torch error: {}\n", e.what_without_backtrace());
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // Its message names the operation and the paths.
    fmt::print(stderr, "gpt2: error: {}\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "gpt2: error: out of memory: the input asked for more memory than this "
                       "process could get\n");
    return 2;
  } catch (const std::exception& e) {
    // Not one of the library's typed errors: a bug to report, not an abort.
    fmt::print(stderr, "gpt2: internal error ({}): {}\n", demangled(typeid(e).name()),
               e.what());
    return 2;
  }
  // Output that could not be written (a full disk, a device that refuses
  // it) is an error, not a success: standard output is flushed and checked
  // once, at the end.
  std::cout.flush();
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0 || !std::cout) {
    const int error = errno;
    fmt::print(stderr, "gpt2: error: cannot write standard output: {}; what was printed is "
                       "incomplete\n",
               error ? std::strerror(error) : "a write failed (a full disk or device?)");
    return 2;
  }
  return rc;
}
