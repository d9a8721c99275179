#include "apps/gpt2/train/train_ranks.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "gpt2/runtime/runtime.h"
#include "gpt2/io/checksum.h"

namespace gpt2::app {

std::shared_ptr<DataParallel> join_run(const DistEnv& env, std::chrono::milliseconds timeout) {
  if (!env.distributed()) {
    fmt::print("dist      world size 1, rank 0\n");
    return nullptr;
  }
  const int threads = default_threads(env.local_world_size);
  set_compute_threads(threads);
  auto dp = std::make_shared<DataParallel>(env, timeout);
  fmt::print("dist      world size {}, rank {} (local {} of {}, pid {}); store {}:{}{}; {} threads; "
             "timeout {} s\n", env.world_size, env.rank, env.local_rank, env.local_world_size,
             ::getpid(), env.master_addr, env.master_port,
             env.agent_store ? " (the launcher's)" : "", threads, timeout.count() / 1000.0);
  std::fflush(stdout);
  return dp;
}

uint32_t weights_crc32(const GPTImpl& model) {
  // The CRC of the per-tensor CRCs: no copy of the weights.
  std::vector<int64_t> crcs;
  for (const auto& p : model.unique_parameters()) crcs.push_back(tensor_crc32(p.detach()));
  return tensor_crc32(torch::tensor(crcs, torch::kInt64));
}

void print_rank_end(const GPTImpl& model, const DataParallel* dp, double train_seconds) {
  if (!dp) return;
  const std::string who = fmt::format("rank {} of {}", dp->rank(), dp->world_size());
  std::string sync;
  if (dp->stats().calls > 0) {
    const SyncStats& s = dp->stats();
    sync = fmt::format("; gradient allreduce {:.1f} ms per step ({} bucket{}, {:.2f} MB), {:.1f}% "
                       "of the training time", 1e3 * s.seconds / s.calls, s.buckets,
                       s.buckets == 1 ? "" : "s", s.bytes / 1e6, 100 * s.seconds / train_seconds);
  }
  fmt::print("weights   {}: crc32 {:#010x}{}\n", who, weights_crc32(model), sync);
  std::fflush(stdout);
}

std::FILE* null_sink() {
  static std::FILE* sink = std::fopen("/dev/null", "w");
  return sink;
}

}  // namespace gpt2::app
