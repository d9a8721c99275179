#include "apps/gpt2/train/train_ranks.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "apps/gpt2/common/model_flags.h"
#include "gpt2/error.h"
#include "gpt2/runtime/runtime.h"
#include "gpt2/io/checksum.h"

namespace gpt2::app {

bool is_cuda_flag(const std::string& device_flag) {
  return device_flag == "cuda" || device_flag.rfind("cuda:", 0) == 0;
}

torch::Device rank_device(const std::string& device_flag, int64_t nproc, const DistEnv& env) {
  if (!(nproc > 1 || env.in_group()) || !is_cuda_flag(device_flag)) {
    return device_from_flag(device_flag);
  }
  const int64_t ranks = nproc > 1 ? nproc : env.world_size;
  const int64_t local = nproc > 1 ? nproc : env.local_world_size;
  const std::string with = fmt::format("--device {} with {} rank{}", device_flag, ranks,
                                       ranks == 1 ? "" : "s");
  try {
    process_group_backend(torch::kCUDA);
  } catch (const DistributedError& e) {
    throw DistributedError(fmt::format("{}: {}", with, e.what()));
  }
  if (device_flag != "cuda") {
    if (local > 1) {
      throw ConfigError(fmt::format("{}: the {} ranks on this machine take a GPU each, "
                                    "cuda:LOCAL_RANK; give --device cuda", with, local));
    }
    return device_from_flag(device_flag);
  }
  // The launcher checks the last GPU its workers need; a worker, its own.
  const int64_t index = nproc > 1 ? nproc - 1 : env.local_rank;
  try {
    const torch::Device gpu = device_from_flag(fmt::format("cuda:{}", index));
    return nproc > 1 ? torch::Device(torch::kCUDA, 0) : gpu;
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: each of the {} ranks on this machine takes the GPU of its "
                                  "LOCAL_RANK (cuda:0 to cuda:{}): {}", with, local, local - 1,
                                  e.what()));
  }
}

std::shared_ptr<DataParallel> join_run(const DistEnv& env, std::chrono::milliseconds timeout,
                                       const torch::Device& device) {
  if (!env.in_group()) {
    fmt::print("dist      world size 1, rank 0\n");
    return nullptr;
  }
  const int threads = default_threads(env.local_world_size);
  set_compute_threads(threads);
  auto dp = std::make_shared<DataParallel>(env, timeout, DataParallel::kBucketBytes, device);
  fmt::print("dist      world size {}, rank {} (local {} of {}, pid {}); store {}:{}{}; {} on {}; "
             "{} threads; timeout {} s\n", env.world_size, env.rank, env.local_rank,
             env.local_world_size, ::getpid(), env.master_addr, env.master_port,
             env.agent_store ? " (the launcher's)" : "", dp->backend(), dp->device().str(), threads,
             timeout.count() / 1000.0);
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
