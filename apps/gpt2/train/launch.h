#pragma once
// `gpt2 train --nproc N`: a small torchrun for one machine. Starts N copies
// of this command line (without --nproc) with torchrun's variables, waits
// for them, forwards SIGINT/SIGTERM, and ends the others when one fails.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "gpt2/train/distributed.h"

namespace gpt2::app {

/// ConfigError, before any worker starts, for --dist-timeout outside
/// (0, 1e6] seconds and --nproc in a process a launcher already made a rank
/// (the device is rank_device's to check, train_ranks.h).
void check_launch(double dist_timeout, int64_t nproc, const DistEnv& env);

/// A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick
/// for port 0). Whoever binds it next may race another program for it, as
/// with torchrun's own pick. Throws FileError when no socket can be bound.
int free_loopback_port();

/// This process's command line, from /proc/self/cmdline.
std::vector<std::string> own_command_line();

/// `args` without `--nproc N` / `--nproc=N`.
std::vector<std::string> without_nproc(const std::vector<std::string>& args);

/// Runs `nproc` workers of `args` (args[0] is ignored: the workers run this
/// executable) on 127.0.0.1 with RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_WORLD_SIZE, MASTER_ADDR (kept when set), MASTER_PORT (kept when
/// set, else a free port) and OMP_NUM_THREADS (kept when set, else
/// cores / nproc, at least 1). When a worker fails, the others get `grace`
/// to end on their own (their collectives fail or time out), then SIGKILL.
/// Returns 0 when all exit 0, else the first failure's exit code (128 +
/// signal for a worker killed by a signal), having said which rank failed.
int launch_local_workers(int64_t nproc, const std::vector<std::string>& args,
                         std::chrono::milliseconds grace);

}  // namespace gpt2::app
