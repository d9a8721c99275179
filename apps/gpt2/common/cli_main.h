#pragma once
// What both programs behind the `gpt2` command do with a command line: the
// flag checks, the parse, the errors as exit statuses, and the final check
// that standard output was written. Needs no LibTorch, so the launcher
// (apps/gpt2/launcher.cpp) uses it as the full program (main.cpp) does.

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>
#include <fmt/format.h>

#include <exception>
#include <functional>
#include <optional>
#include <string>

namespace gpt2::app {

/// A message for an exception type run_cli does not know ("torch error:
/// ..."), or nullopt.
using DescribeError = std::function<std::optional<std::string>(const std::exception&)>;

/// CLI::Range with one wording on every CLI11 release (2.3 says "not in
/// range 1 to 1024", 2.4 "not in range [1 - 1024]"): a value outside
/// [lo, hi] gets "Value 0 not in range 1 to 1024".
template <typename T>
CLI::Validator in_range(T lo, T hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        T value{};
        if (!CLI::detail::lexical_cast(text, value)) {
          return fmt::format("Value {} could not be converted", text);
        }
        if (!(value >= lo && value <= hi)) {  // NaN is in no range
          return fmt::format("Value {} not in range {} to {}", text, lo, hi);
        }
        return {};
      },
      fmt::format("{} in [{} - {}]", CLI::detail::type_name<T>(), lo, hi), "RANGE");
}

/// Refuses an empty path ("--init-from: the path is empty"). A path that
/// does not exist is left to the reader, whose error names the file, not
/// one of an option's spellings (--checkpoint for --model).
inline CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& text) { return text.empty() ? std::string("the path is empty") : std::string(); },
      "PATH");
}

/// Refuses a negative number for an unsigned option (or each item of a
/// list), which CLI11 would otherwise wrap: "-1" would be 2^64 - 1.
inline CLI::Validator not_negative() {
  return CLI::Validator(
      [](std::string& text) {
        return text.find('-') == std::string::npos
                   ? std::string()
                   : fmt::format("Value {} is negative; a count or seed is at least 0", text);
      },
      "UINT");
}

/// Parses `argv` into `app` and runs the chosen command; returns the exit
/// status: `rc` (which the command's callback sets) on success, CLI11's
/// code for a parse error, 2 for a gpt2::Error, a filesystem error, memory
/// exhaustion or any other exception (as `describe` words it, else as an
/// internal error), and 2 when standard output could not be written.
int run_cli(CLI::App& app, int argc, char** argv, const int& rc,
            const DescribeError& describe = nullptr);

}  // namespace gpt2::app
