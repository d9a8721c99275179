#pragma once
// The data-parallel side of `gpt2 train`: each rank's device, joining the
// process group that torchrun's variables describe, with C/N threads per
// process, and the start and end lines that every rank prints.

#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "gpt2/model/gpt.h"
#include "gpt2/train/distributed.h"

namespace gpt2::app {

/// Whether --device names a CUDA GPU: cuda or cuda:N.
bool is_cuda_flag(const std::string& device_flag);

/// This process's device for --device `device_flag`, checked before any
/// worker starts or group forms. A single process: device_from_flag's. One
/// of several ranks (`nproc` > 1 for the --nproc launcher, else `env` in a
/// group): cpu stays cpu, on Gloo; cuda means cuda:LOCAL_RANK, a GPU per
/// rank on each machine, on NCCL (the launcher gets cuda:0 after checking
/// there is a GPU for each worker). DistributedError for a GPU when this
/// build has no NCCL, naming the LibTorch; ConfigError for cuda:N when a
/// machine has more than one rank, and for fewer GPUs than ranks.
torch::Device rank_device(const std::string& device_flag, int64_t nproc, const DistEnv& env);

/// In a group (env.in_group()): sets the compute threads (default_threads:
/// torchrun's OMP_NUM_THREADS, else the cores shared out) and joins the
/// group on `device` (Gloo on the CPU, NCCL on a GPU), waiting at most
/// `timeout` for the others; nullptr for a single process. Prints the
/// start line on every rank: `dist      world size 2, rank 0 (local 0 of
/// 2, pid ...); store ...; gloo on cpu; ...`. Throws DistributedError
/// before any training when the group cannot form.
std::shared_ptr<DataParallel> join_run(const DistEnv& env, std::chrono::milliseconds timeout,
                                       const torch::Device& device);

/// CRC-32 of the CRC-32s of the model's unique parameters, in order: equal
/// on every rank when the ranks hold the same weights.
uint32_t weights_crc32(const GPTImpl& model);

/// In a data-parallel run, every rank's last line: its weights' CRC-32 and
/// the gradient averaging's share of the training time (`train_seconds`).
/// Prints nothing for a single process (`dp` null).
void print_rank_end(const GPTImpl& model, const DataParallel* dp, double train_seconds);

/// Where rank > 0 prints what only rank 0 should show: /dev/null, opened once.
std::FILE* null_sink();

}  // namespace gpt2::app
