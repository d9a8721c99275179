// The bench's commands quote paths for /bin/sh: a path holding quotes,
// spaces or a dollar sign reaches the program as it was given.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "apps/gpt2/bench/train_sides.h"

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

}  // namespace
}  // namespace gpt2::app
