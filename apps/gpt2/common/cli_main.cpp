#include "apps/gpt2/common/cli_main.h"

#include <CLI/CLI.hpp>
#include <cxxabi.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <new>
#include <typeinfo>
#include <vector>

#include "gpt2/error.h"

namespace gpt2::app {
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

int run_cli(CLI::App& app, int argc, char** argv, const int& rc, const DescribeError& describe) {
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
  } catch (const std::filesystem::filesystem_error& e) {
    // Its message names the operation and the paths.
    fmt::print(stderr, "gpt2: error: {}\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "gpt2: error: out of memory: the input asked for more memory than this "
                       "process could get\n");
    return 2;
  } catch (const std::exception& e) {
    if (auto message = describe ? describe(e) : std::nullopt) {
      fmt::print(stderr, "gpt2: {}\n", *message);
      return 2;
    }
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

}  // namespace gpt2::app
