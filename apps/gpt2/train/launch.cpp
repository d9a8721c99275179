#include "apps/gpt2/train/launch.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>

#include "apps/gpt2/common/stop_signal.h"
#include "gpt2/error.h"

extern char** environ;

namespace gpt2::app {
namespace {

constexpr int kMaxWorkers = 1024;
// The workers not yet reaped, for the signal handler (which may only read
// plain arrays). A reaped worker's pid is cleared, never signalled again.
volatile pid_t g_workers[kMaxWorkers];
std::atomic<int> g_worker_count{0};

extern "C" void forward_signal(int sig) {
  for (int i = 0; i < g_worker_count.load(); ++i) {
    if (g_workers[i] > 0) ::kill(g_workers[i], sig);
  }
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) {
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  }
  return fmt::format("exited with code {}", WEXITSTATUS(status));
}

int exit_code(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace

std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t at = 0; at < all.size();) {
    const size_t end = all.find('\0', at);
    args.push_back(all.substr(at, end - at));
    at = end == std::string::npos ? all.size() : end + 1;
  }
  return args;
}

std::vector<std::string> without_nproc(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--nproc") {
      ++i;  // and its value
    } else if (args[i].rfind("--nproc=", 0) != 0) {
      out.push_back(args[i]);
    }
  }
  return out;
}

void check_launch(double dist_timeout, int64_t nproc, const DistEnv& env) {
  if (!(dist_timeout > 0 && dist_timeout <= 1e6)) {
    throw ConfigError(
        fmt::format("--dist-timeout must be in (0, 1e6] seconds, got {}", dist_timeout));
  }
  if (nproc > 1 && env.in_group()) {
    throw ConfigError(fmt::format("--nproc {} starts its own workers, but this process is already "
                                  "rank {} of {} (WORLD_SIZE is set by a launcher); drop one",
                                  nproc, env.rank, env.world_size));
  }
}

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw FileError(fmt::format("cannot find a free port on 127.0.0.1: {}", why));
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

int launch_local_workers(int64_t nproc, const std::vector<std::string>& args,
                         std::chrono::milliseconds grace) {
  if (nproc < 1 || nproc > kMaxWorkers) {
    throw ConfigError(fmt::format("--nproc must be in [1, {}], got {}", kMaxWorkers, nproc));
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  }
  env["WORLD_SIZE"] = env["LOCAL_WORLD_SIZE"] = std::to_string(nproc);
  env["MASTER_ADDR"] = env_or("MASTER_ADDR", "127.0.0.1");
  env["MASTER_PORT"] = env_or("MASTER_PORT", std::to_string(free_loopback_port()));
  env["OMP_NUM_THREADS"] = env_or("OMP_NUM_THREADS", std::to_string(std::max<int64_t>(1, cores / nproc)));
  fmt::print("launch    {} workers on {}:{}, {} threads each (OMP_NUM_THREADS)\n", nproc,
             env["MASTER_ADDR"], env["MASTER_PORT"], env["OMP_NUM_THREADS"]);
  std::fflush(stdout);

  std::vector<char*> argv;
  const std::string self = "/proc/self/exe";
  argv.push_back(const_cast<char*>(self.c_str()));
  for (size_t i = 1; i < args.size(); ++i) argv.push_back(const_cast<char*>(args[i].c_str()));
  argv.push_back(nullptr);
  const SignalScope forwarding(forward_signal);
  // Each worker in its own process group: a terminal's Ctrl-C reaches the
  // launcher only, which forwards it once (twice would end a worker at once).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::map<pid_t, int64_t> rank_of;
  for (int64_t r = 0; r < nproc; ++r) {
    env["RANK"] = env["LOCAL_RANK"] = std::to_string(r);
    std::vector<std::string> kvs;
    for (const auto& [k, v] : env) kvs.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& kv : kvs) envp.push_back(kv.data());
    envp.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, self.c_str(), nullptr, &attr, argv.data(), envp.data());
    if (rc != 0) {
      forward_signal(SIGKILL);
      throw FileError(fmt::format("--nproc: cannot start worker {}: {}", r, std::strerror(rc)));
    }
    g_workers[g_worker_count.load()] = pid;
    g_worker_count.fetch_add(1);
    rank_of[pid] = r;
  }
  posix_spawnattr_destroy(&attr);

  int result = 0;
  auto deadline = std::chrono::steady_clock::time_point::max();
  size_t running = rank_of.size();
  while (running > 0) {
    int status = 0;
    // Until a worker fails, each is reaped the moment it ends, so the one
    // named is the first to fail (a killed rank, not the peer that saw its
    // connection drop a few ms later); after that, polled for the deadline.
    const bool grace_running = deadline != std::chrono::steady_clock::time_point::max();
    const pid_t pid = ::waitpid(-1, &status, grace_running ? WNOHANG : 0);
    if (pid > 0 && rank_of.count(pid)) {
      --running;
      g_workers[rank_of[pid]] = 0;
      if (exit_code(status) != 0 && result == 0) {
        result = exit_code(status);
        fmt::print(stderr, "gpt2: error: worker rank {} (pid {}) {}; the other {} get {} s to end\n",
                   rank_of[pid], pid, describe(status), running, grace.count() / 1000.0);
        deadline = std::chrono::steady_clock::now() + grace;
      }
    } else if (pid < 0 && errno != EINTR) {
      break;
    } else {
      if (std::chrono::steady_clock::now() > deadline) forward_signal(SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  g_worker_count = 0;
  return result;
}

}  // namespace gpt2::app
