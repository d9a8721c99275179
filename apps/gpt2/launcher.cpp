// bin/gpt2, the command's front door. Loading LibTorch's libraries and
// running their static initializers takes about half a second before main()
// (`gpt2 --help` measured 0.56 s on the AMD EPYC), so a command that needs
// no model would start like a large program. Those commands (tokenize) run
// here, in a process without LibTorch; every other command line goes, as it
// is, to the full program (libexec/gpt2/gpt2-full beside this one), which
// this process becomes (execv: same pid, same signals, same arguments).

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/tokenize_command.h"

namespace {

// libexec/gpt2/gpt2-full, found from this executable's own path.
std::string full_program() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto dir = ec ? std::filesystem::path(".") : self.parent_path();
  return (dir / ".." / "libexec" / "gpt2" / "gpt2-full").lexically_normal().string();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "tokenize") == 0) {
    CLI::App app{"gpt2: GPT-2 in LibTorch, laid out like nanoGPT"};
    app.require_subcommand(1);
    int rc = 0;
    gpt2::app::add_tokenize_command(app, &rc);
    return gpt2::app::run_cli(app, argc, argv, rc);
  }
  const std::string full = full_program();
  ::execv(full.c_str(), argv);
  fmt::print(stderr, "gpt2: error: cannot run the full program '{}': {} (it is built beside "
                     "bin/gpt2, in libexec/gpt2/)\n", full, std::strerror(errno));
  return 2;
}
