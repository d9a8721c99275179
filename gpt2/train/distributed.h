#pragma once
/// Data-parallel training on PyTorch's own distributed engine, c10d: a
/// TCPStore for the rendezvous (rank 0 serves it at MASTER_ADDR:MASTER_PORT,
/// as torchrun's env:// convention has it) and a process group for the
/// collectives: Gloo when the model is on the CPU, NCCL when it is on a CUDA
/// GPU and this build has NCCL (has_nccl()). Every rank holds the whole
/// model; gradients are averaged after backward in ~25 MB buckets (DDP's
/// default bucket size), so the weights stay identical on every rank. The
/// c10d, Gloo and CUDA headers stay in the .cpp files, so this header needs
/// none of them. Where a process sits in the run is read from the variables
/// torchrun sets (DistEnv), checked before any socket is opened.

#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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
  /// Whether this process joins a process group: one rank of several, or
  /// the one rank of a launcher's world of one (read with group_of_one),
  /// which has a rendezvous address.
  bool in_group() const { return distributed() || !master_addr.empty(); }
};

/// The environment variable named, or nullptr: std::getenv by default.
using GetEnv = std::function<const char*(const char*)>;

/// Reads DistEnv from the environment. WORLD_SIZE unset gives a
/// single-process DistEnv, and so does WORLD_SIZE 1 unless `group_of_one`
/// and MASTER_ADDR is set (torchrun --nproc_per_node 1 sets it): that world
/// of one is read in full, so that its rank can form a group of one.
/// Otherwise RANK, MASTER_ADDR and MASTER_PORT are required (LOCAL_RANK and
/// LOCAL_WORLD_SIZE default to RANK and WORLD_SIZE); throws
/// DistributedError naming a variable that is missing, not an integer, or
/// out of range, and a MASTER_ADDR that does not resolve.
DistEnv read_dist_env(const GetEnv& getenv = {}, bool group_of_one = false);

/// Whether this build of the library has NCCL: gpt2/CMakeLists.txt found
/// ProcessGroupNCCL in a LibTorch built with CUDA and NCCL (PyPI's CUDA
/// torch is; Debian's CPU-only LibTorch is not).
bool has_nccl();

/// The c10d backend for collectives on `device`: "gloo" for the CPU, "nccl"
/// for a CUDA GPU when `nccl` (this build's has_nccl() by default). Throws
/// DistributedError for a CUDA GPU without NCCL, naming the LibTorch, and
/// for any other device kind.
std::string process_group_backend(const torch::Device& device, bool nccl = has_nccl());

/// What the gradient averaging did, summed over the run so far.
struct SyncStats {
  /// Buckets per step and their total bytes (the unique parameters' gradients).
  int64_t buckets = 0;
  int64_t bytes = 0;
  /// Calls to average_gradients, and the wall seconds they took together
  /// (copy into the buckets, allreduce, copy back).
  int64_t calls = 0;
  double seconds = 0;
};

/// One rank's membership of a process group (Gloo or NCCL), and the
/// collectives the trainer needs. Every rank must make the same calls in
/// the same order. Collective failures that c10d reports (on Gloo: a peer
/// that died, or no answer within the timeout) throw DistributedError; on
/// NCCL a dead or hung peer is left to c10d's NCCL watchdog, which PyTorch
/// documents as ending the process once a collective passes the timeout.
class DataParallel {
 public:
  /// PyTorch DDP's default bucket cap: 25 MB.
  static constexpr int64_t kBucketBytes = 25 * 1024 * 1024;

  /// Joins the group `env` describes (env.in_group()): rank 0 serves the
  /// store (unless the launcher does), every rank waits at most `timeout`
  /// for the others to join and, later, for each collective. Gradients go
  /// in buckets of at most `bucket_bytes`. The collectives run on `device`,
  /// where the model is: Gloo for the CPU, NCCL for a CUDA GPU (cuda without
  /// an index means cuda:LOCAL_RANK), which becomes this process's current
  /// CUDA device. Throws DistributedError for a device without a process
  /// group here (process_group_backend) or a GPU this machine lacks, before
  /// any socket is opened; when the store cannot be served or reached; or
  /// when the group does not form in time.
  DataParallel(const DistEnv& env, std::chrono::milliseconds timeout,
               int64_t bucket_bytes = kBucketBytes, const torch::Device& device = torch::kCPU);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  /// This rank, and the number of ranks.
  int64_t rank() const { return env_.rank; }
  int64_t world_size() const { return env_.world_size; }
  /// The environment it was made from.
  const DistEnv& env() const { return env_; }
  /// The collective timeout.
  std::chrono::milliseconds timeout() const { return timeout_; }
  /// Where the collectives run, and on what: "gloo" or "nccl".
  const torch::Device& device() const { return device_; }
  const std::string& backend() const { return backend_; }

  /// Overwrites `tensors` on every rank with rank 0's values (bucketed
  /// broadcast), so that all ranks start from rank 0's weights.
  void broadcast(const std::vector<torch::Tensor>& tensors);
  /// Replaces each tensor's .grad with its mean over the ranks (SUM
  /// allreduce of the buckets, then / world_size); an undefined .grad counts
  /// as zeros. `tensors` must be the same list, each tensor once, at every
  /// call and on every rank. Returns the mean of `value` over the ranks
  /// (the step's loss), reduced in double beside the buckets.
  double average_gradients(const std::vector<torch::Tensor>& tensors, double value);
  /// Sum of `value` over the ranks, in double (a host value, taken to the
  /// group's device for the collective and back).
  double sum(double value);
  /// Whether `flag` is true on any rank (to stop all ranks at the same step).
  bool any(bool flag);
  /// Compares `text` (a description of what every rank must agree on, such
  /// as the model's config and the recipe) with rank 0's, before the first
  /// collective that would fail obscurely on a difference: returns when
  /// every rank's is equal, else throws DistributedError on every rank, the
  /// ranks that differ showing both texts.
  void check_same(const std::string& what, const std::string& text);
  /// Gradient averaging so far.
  const SyncStats& stats() const { return stats_; }

 private:
  struct Group;
  DistEnv env_;
  std::chrono::milliseconds timeout_;
  int64_t bucket_bytes_;
  torch::Device device_;
  std::string backend_;
  std::unique_ptr<Group> group_;
  SyncStats stats_;
};

/// Splits tensors, in order, into runs whose float bytes stay within
/// `cap_bytes` (a tensor larger than the cap is a run of its own). Returns
/// each run's [begin, end) index pair. Used for the gradient buckets.
std::vector<std::pair<size_t, size_t>> bucket_ranges(const std::vector<torch::Tensor>& tensors,
                                                     int64_t cap_bytes);

}  // namespace gpt2
