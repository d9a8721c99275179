#include "apps/gpt2/bench/shell_command.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "gpt2/error.h"

namespace gpt2::app {
namespace {

// The last line of `path` that holds more than blanks, cut to 200 bytes; ""
// when there is none.
std::string last_line_of_file(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last.size() > 200 ? last.substr(0, 197) + "..." : last;
}

// `timeout` exits 124 when it sent TERM at the cap, 137 when KILL followed.
constexpr int kTimedOut = 124, kKilledAfterTimeout = 137;

}  // namespace

std::string shell_word(const std::string& word) {
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

CappedRun run_capped(const std::string& command, int timeout_s) {
  std::string err_path = (std::filesystem::temp_directory_path() / "gpt2-bench-XXXXXX").string();
  const int fd = ::mkstemp(err_path.data());
  if (fd < 0) {
    throw FileError(fmt::format("cannot make a temporary file like '{}' for the standard error of "
                                "{}: {}", err_path, command, std::strerror(errno)));
  }
  ::close(fd);
  // exec: timeout replaces popen's shell, so a signal that ends the command
  // (timeout raises it on itself) reaches pclose's status.
  const std::string capped = fmt::format("exec timeout -k 10 {} /bin/sh -c {} 2>{}", timeout_s,
                                         shell_word(command), shell_word(err_path));
  CappedRun run;
  FILE* pipe = ::popen(capped.c_str(), "r");
  if (!pipe) {
    std::filesystem::remove(err_path);
    throw FileError(fmt::format("cannot run {}: {}", command, std::strerror(errno)));
  }
  const auto start = std::chrono::steady_clock::now();
  char buffer[4096];
  while (const size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) run.out.append(buffer, n);
  const int status = ::pclose(pipe);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string last = last_line_of_file(err_path);
  std::error_code ignored;
  std::filesystem::remove(err_path, ignored);
  const std::string quoted = last.empty() ? " (nothing on standard error)" : ": " + last;
  if (status == -1) {
    run.failure = fmt::format("its exit status is lost: {}", std::strerror(errno));
  } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && seconds >= timeout_s) {
    // timeout's KILL goes to the whole process group, itself included.
    run.failure = fmt::format("timed out after {} s (killed {:.0f} s later)", timeout_s,
                              seconds - timeout_s);
  } else if (WIFSIGNALED(status)) {
    run.failure = fmt::format("killed by signal {} ({}){}", WTERMSIG(status),
                              ::strsignal(WTERMSIG(status)), quoted);
  } else if (const int code = WEXITSTATUS(status); code == kTimedOut || code == kKilledAfterTimeout) {
    run.failure = fmt::format("timed out after {} s", timeout_s);
  } else if (code != 0) {
    run.failure = fmt::format("exit {}{}", code, quoted);
  }
  return run;
}

}  // namespace gpt2::app
