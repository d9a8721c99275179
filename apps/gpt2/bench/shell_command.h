#pragma once
// The shell commands `gpt2 bench` starts: words quoted for /bin/sh, and a
// command run in its own process under a time cap with its standard error
// kept aside, so that a side that hangs or fails is reported as such
// instead of holding up or ending the bench.

#include <string>

namespace gpt2::app {

/// `word` quoted for /bin/sh: every byte stays itself, quotes included.
std::string shell_word(const std::string& word);

/// How a capped command ended.
struct CappedRun {
  /// Its whole standard output.
  std::string out;
  /// Empty when it exited 0; else why not: "timed out after 240 s",
  /// "exit 1: <its last line on standard error>", "killed by signal 11 (...)".
  std::string failure;
};

/// Runs `command` through /bin/sh under coreutils' `timeout -k 10
/// timeout_s` (TERM to its process group at the cap, KILL 10 s later), its
/// standard error in a temporary file that a failure quotes the last line
/// of. FileError naming the command when no process starts.
CappedRun run_capped(const std::string& command, int timeout_s);

}  // namespace gpt2::app
