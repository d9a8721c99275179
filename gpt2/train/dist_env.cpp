#include "gpt2/train/distributed.h"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <limits>

namespace gpt2 {
namespace {

// The variables a launcher must set for a run of more than one process.
constexpr const char* kRequired = "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT";

int64_t integer_var(const GetEnv& getenv, const char* name, int64_t lo, int64_t hi,
                    const std::string& range) {
  const char* text = getenv(name);
  if (!text) {
    throw DistributedError(fmt::format("environment variable {} is not set; a data-parallel run "
                                       "needs {} (torchrun sets them, as does gpt2 train --nproc N)",
                                       name, kRequired));
  }
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (*text == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi) {
    throw DistributedError(
        fmt::format("environment variable {}='{}' must be an integer in {}", name, text, range));
  }
  return v;
}

void check_resolves(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) {
    throw DistributedError(fmt::format("MASTER_ADDR '{}' does not resolve to an address: {}",
                                       host, ::gai_strerror(rc)));
  }
  ::freeaddrinfo(found);
}

}  // namespace

DistEnv read_dist_env(const GetEnv& getenv_fn, bool group_of_one) {
  const GetEnv getenv = getenv_fn ? getenv_fn : [](const char* n) { return std::getenv(n); };
  DistEnv env;
  const char* world = getenv("WORLD_SIZE");
  if (!world) return env;
  if (std::string(world) == "1" && !(group_of_one && getenv("MASTER_ADDR"))) return env;
  constexpr int64_t kMaxRanks = std::numeric_limits<int>::max();
  env.world_size = integer_var(getenv, "WORLD_SIZE", 1, kMaxRanks, "[1, 2^31)");
  const std::string ranks = fmt::format("[0, {}) (WORLD_SIZE is {})", env.world_size, env.world_size);
  env.rank = integer_var(getenv, "RANK", 0, env.world_size - 1, ranks);
  env.local_world_size = getenv("LOCAL_WORLD_SIZE")
                             ? integer_var(getenv, "LOCAL_WORLD_SIZE", 1, env.world_size,
                                           fmt::format("[1, {}] (WORLD_SIZE)", env.world_size))
                             : env.world_size;
  env.local_rank = getenv("LOCAL_RANK")
                       ? integer_var(getenv, "LOCAL_RANK", 0, env.local_world_size - 1,
                                     fmt::format("[0, {}) (LOCAL_WORLD_SIZE is {})",
                                                 env.local_world_size, env.local_world_size))
                       : env.rank % env.local_world_size;
  const char* addr = getenv("MASTER_ADDR");
  if (!addr || *addr == '\0') {
    throw DistributedError(fmt::format("environment variable MASTER_ADDR is {}; a data-parallel "
                                       "run needs {} (torchrun sets them, as does gpt2 train "
                                       "--nproc N)", addr ? "empty" : "not set", kRequired));
  }
  env.master_addr = addr;
  env.master_port = static_cast<int>(integer_var(getenv, "MASTER_PORT", 1, 65535, "[1, 65535]"));
  check_resolves(env.master_addr, env.master_port);
  const char* agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
  env.agent_store = agent && std::string(agent) == "True";
  const char* run_id = getenv("TORCHELASTIC_RUN_ID");
  const char* restart = getenv("TORCHELASTIC_RESTART_COUNT");
  if (run_id) env.store_prefix += fmt::format("/{}/{}", run_id, restart ? restart : "0");
  return env;
}

}  // namespace gpt2
