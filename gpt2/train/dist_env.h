#pragma once
/// Where a process sits in a data-parallel run, read from the variables
/// torchrun sets and checked before any socket is opened; and the error
/// type of every data-parallel failure.

#include <cstdint>
#include <functional>
#include <string>

#include "gpt2/error.h"

namespace gpt2 {

/// A data-parallel run that cannot start or cannot go on: a missing or bad
/// environment variable, a port in use, a peer rank that died or hung past
/// the timeout. The message names the rank, the variable or peer, and the values.
class DistributedError : public Error {
 public:
  using Error::Error;
};

/// Where this process sits in a run, from the variables torchrun (or any
/// scheduler following it) sets: RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
struct DistEnv {
  /// This process's rank in [0, world_size).
  int64_t rank = 0;
  /// Processes in the run; 1 means an ordinary single-process run.
  int64_t world_size = 1;
  /// Rank among the processes on this machine, and their number.
  int64_t local_rank = 0;
  int64_t local_world_size = 1;
  /// Host and port of the rendezvous store.
  std::string master_addr;
  int master_port = 0;
  /// TORCHELASTIC_USE_AGENT_STORE=True: the launcher serves the store
  /// (torchrun's static rendezvous), so rank 0 connects to it as a client.
  bool agent_store = false;
  /// Prefix of this run's store keys (torchrun's run id and restart count),
  /// so that a restarted group does not read its predecessor's keys.
  std::string store_prefix = "gpt2";

  /// Whether this is one rank of several.
  bool distributed() const { return world_size > 1; }
};

/// The environment variable named, or nullptr: std::getenv by default.
using GetEnv = std::function<const char*(const char*)>;

/// Reads DistEnv from the environment. WORLD_SIZE unset or 1 gives a
/// single-process DistEnv. Otherwise RANK, MASTER_ADDR and MASTER_PORT are
/// required (LOCAL_RANK and LOCAL_WORLD_SIZE default to RANK and
/// WORLD_SIZE); throws DistributedError naming a variable that is missing,
/// not an integer, or out of range, and a MASTER_ADDR that does not resolve.
DistEnv read_dist_env(const GetEnv& getenv = {});

}  // namespace gpt2
