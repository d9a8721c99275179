// The bench's commands quote paths for /bin/sh: a path holding quotes,
// spaces or a dollar sign reaches the program as it was given. A command
// run capped gives its output, or says how it failed: the cap, its exit
// code with its last line on standard error, the signal that ended it.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "apps/gpt2/bench/shell_command.h"

namespace gpt2::app {
namespace {

std::string echoed_by_sh(const std::string& word) {
  const std::string command = "printf %s " + shell_word(word);
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  char buffer[256];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

TEST(ShellWord, EveryByteReachesTheProgramAsGiven) {
  for (const std::string word : {"/usr/bin/python3", "/tmp/it's here/python3", "'", "''",
                                 "a b\tc", "$HOME `id` \"x\" \\ ; | &", ""}) {
    EXPECT_EQ(echoed_by_sh(word), word) << shell_word(word);
  }
}

TEST(RunCapped, GivesTheWholeOutputOfACommandThatSucceeds) {
  const CappedRun run = run_capped("X='a b' sh -c 'printf \"$X\\n\"'; echo noise >&2; echo two", 30);
  EXPECT_EQ(run.out, "a b\ntwo\n");
  EXPECT_EQ(run.failure, "");
}

TEST(RunCapped, QuotesTheLastLineOnStandardErrorOfAFailure) {
  const CappedRun run = run_capped("echo first >&2; echo 'the reason' >&2; echo >&2; exit 3", 30);
  EXPECT_EQ(run.failure, "exit 3: the reason");
  EXPECT_EQ(run_capped("exit 1", 30).failure, "exit 1 (nothing on standard error)");
}

TEST(RunCapped, StopsACommandAtItsCap) {
  const auto start = std::chrono::steady_clock::now();
  const CappedRun run = run_capped("echo started; sleep 60", 1);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(run.failure, "timed out after 1 s");
  EXPECT_EQ(run.out, "started\n");
  EXPECT_LT(s, 10);  // TERM at 1 s ends sleep; KILL would come at 11 s
}

TEST(RunCapped, NamesTheSignalThatEndedACommand) {
  const CappedRun run = run_capped("echo dying >&2; kill -SEGV $$", 30);
  EXPECT_EQ(run.failure.rfind("killed by signal 11 (", 0), 0u) << run.failure;
  EXPECT_NE(run.failure.find(": dying"), std::string::npos) << run.failure;
}

}  // namespace
}  // namespace gpt2::app
