// DataParallel over c10d: TCPStore rendezvous, then the collectives on the
// process group detail/process_group.h forms (Gloo or NCCL), on tensors of
// the group's device; values the host reads go there and back.
#include "gpt2/train/distributed.h"

#include <fmt/format.h>
#include <torch/cuda.h>

#include <chrono>

#include "gpt2/train/detail/process_group.h"
#include "gpt2/train/detail/rendezvous.h"

namespace gpt2 {
namespace {

using Clock = std::chrono::steady_clock;
using detail::first_line;
using detail::where;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A CUDA device without an index is the GPU of the rank's LOCAL_RANK.
torch::Device rank_device(const torch::Device& device, const DistEnv& env) {
  if (!device.is_cuda() || device.has_index()) return device;
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
}

}  // namespace

struct DataParallel::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<detail::Collectives> pg;
  std::vector<std::pair<size_t, size_t>> buckets;  // of the tensors averaged
  std::vector<torch::Tensor> buffers;              // one flat float buffer per bucket, kept
  torch::Tensor scalar;                            // the loss beside them, float64
};

DataParallel::DataParallel(const DistEnv& env, std::chrono::milliseconds timeout,
                           int64_t bucket_bytes, const torch::Device& device)
    : env_(env),
      timeout_(timeout),
      bucket_bytes_(bucket_bytes),
      device_(rank_device(device, env)),
      backend_(process_group_backend(device_)),
      group_(std::make_unique<Group>()) {
  TORCH_CHECK(env.in_group(), "DataParallel needs WORLD_SIZE > 1 or a rendezvous address, got "
              "WORLD_SIZE ", env.world_size, " and MASTER_ADDR '", env.master_addr, "'");
  const auto gpus = device_.is_cuda() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
  if (device_.is_cuda() && device_.index() >= gpus) {
    throw DistributedError(fmt::format("{}: its collectives would run on {}, and this LibTorch "
                                       "sees {} CUDA GPU{} here", where(env), device_.str(), gpus,
                                       gpus == 1 ? "" : "s"));
  }
  group_->scalar = torch::zeros({1}, torch::TensorOptions(torch::kFloat64).device(device_));
  group_->store = detail::open_store(env, timeout);
  try {
    group_->pg = detail::make_process_group(group_->store, env, device_, timeout);
  } catch (const DistributedError&) {
    throw;
  } catch (const std::exception& e) {
    // Rank 0 serving the store talks to itself; a client may meet a stranger.
    const std::string strange = detail::serves_store(env) ? "" : detail::stranger_message(env, e);
    if (!strange.empty()) throw DistributedError(fmt::format("{}: {}", where(env), strange));
    throw DistributedError(fmt::format(
        "{}: the {} process group of {} ranks did not form within {} s (did every rank start, "
        "with the same MASTER_ADDR and MASTER_PORT?): {}",
        where(env), backend_ == "nccl" ? "NCCL" : "Gloo", env.world_size,
        timeout.count() / 1000.0, first_line(e)));
  }
}

DataParallel::~DataParallel() {
  if (group_ && group_->pg) detail::shut_down(*group_->pg);
}

namespace {

// Waits for `work`, turning any failure into a DistributedError that names
// the rank, the collective and the timeout.
void wait_for(const c10::intrusive_ptr<c10d::Work>& work, const DataParallel& dp,
              const std::string& what) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    // The peer: Gloo's message names an address at best.
    const std::string peers = dp.world_size() == 2
                                  ? fmt::format("the peer (rank {})", 1 - dp.rank())
                                  : fmt::format("a peer (another of the {} ranks)", dp.world_size());
    throw DistributedError(fmt::format(
        "rank {} of {}: {} failed: {}; {} has died, or did not answer within the {} s timeout",
        dp.rank(), dp.world_size(), what, first_line(e), peers, dp.timeout().count() / 1000.0));
  }
}

// Copies `tensors` (or their grads) into, or back from, one flat buffer.
void flatten(const std::vector<torch::Tensor>& ts, std::pair<size_t, size_t> range,
             torch::Tensor& buffer, bool into, bool grads) {
  int64_t offset = 0;
  for (size_t i = range.first; i < range.second; ++i) {
    torch::Tensor t = grads ? ts[i].mutable_grad() : ts[i];
    if (grads && !t.defined()) t = ts[i].mutable_grad() = torch::zeros_like(ts[i]);
    torch::Tensor slot = buffer.narrow(0, offset, t.numel()).view(t.sizes());
    torch::NoGradGuard no_grad;
    if (into) slot.copy_(t); else t.copy_(slot);
    offset += t.numel();
  }
}

}  // namespace

std::vector<std::pair<size_t, size_t>> bucket_ranges(const std::vector<torch::Tensor>& tensors,
                                                     int64_t cap_bytes) {
  std::vector<std::pair<size_t, size_t>> out;
  int64_t bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int64_t b = tensors[i].numel() * static_cast<int64_t>(sizeof(float));
    if (out.empty() || bytes + b > cap_bytes) {
      out.emplace_back(i, i);
      bytes = 0;
    }
    out.back().second = i + 1;
    bytes += b;
  }
  return out;
}

void DataParallel::broadcast(const std::vector<torch::Tensor>& tensors) {
  for (const auto& range : bucket_ranges(tensors, bucket_bytes_)) {
    int64_t n = 0;
    for (size_t i = range.first; i < range.second; ++i) n += tensors[i].numel();
    std::vector<torch::Tensor> flat = {
        torch::empty({n}, torch::TensorOptions(torch::kFloat32).device(device_))};
    flatten(tensors, range, flat[0], true, false);
    wait_for(group_->pg->broadcast(flat), *this, "the broadcast of rank 0's weights");
    flatten(tensors, range, flat[0], false, false);
  }
}

double DataParallel::average_gradients(const std::vector<torch::Tensor>& tensors, double value) {
  const auto start = Clock::now();
  Group& g = *group_;
  if (g.buffers.empty()) {
    g.buckets = bucket_ranges(tensors, bucket_bytes_);
    for (const auto& range : g.buckets) {
      int64_t n = 0;
      for (size_t i = range.first; i < range.second; ++i) n += tensors[i].numel();
      g.buffers.push_back(torch::empty({n}, torch::TensorOptions(torch::kFloat32).device(device_)));
      stats_.bytes += n * static_cast<int64_t>(sizeof(float));
    }
    stats_.buckets = static_cast<int64_t>(g.buckets.size());
  }
  TORCH_CHECK(g.buckets.back().second == tensors.size(), "average_gradients got ", tensors.size(),
              " tensors, its buckets hold ", g.buckets.back().second);
  // All buckets in flight at once: Gloo's threads (or NCCL's stream) work
  // through them while the next is copied in.
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (size_t b = 0; b < g.buckets.size(); ++b) {
    flatten(tensors, g.buckets[b], g.buffers[b], true, true);
    std::vector<torch::Tensor> one = {g.buffers[b]};
    works.push_back(g.pg->allreduce(one));
  }
  g.scalar.fill_(value);
  std::vector<torch::Tensor> scalar = {g.scalar};
  works.push_back(g.pg->allreduce(scalar));
  for (size_t b = 0; b < works.size(); ++b) {
    wait_for(works[b], *this, "the gradient allreduce");
    if (b == g.buckets.size()) break;
    g.buffers[b].div_(static_cast<double>(world_size()));
    flatten(tensors, g.buckets[b], g.buffers[b], false, true);
  }
  // On a GPU, item() waits for the work queued above, so the time is all of it.
  const double mean = g.scalar.item<double>() / static_cast<double>(world_size());
  stats_.calls += 1;
  stats_.seconds += seconds_since(start);
  return mean;
}

double DataParallel::sum(double value) {
  std::vector<torch::Tensor> t = {
      torch::full({1}, value, torch::TensorOptions(torch::kFloat64).device(device_))};
  wait_for(group_->pg->allreduce(t), *this, "an allreduce");
  return t[0].item<double>();
}

bool DataParallel::any(bool flag) { return sum(flag ? 1.0 : 0.0) > 0; }

void DataParallel::check_same(const std::string& what, const std::string& text) {
  // Rank 0's text to every rank: its length, then its bytes (as float64,
  // the type every collective here already uses; the texts are short),
  // written and read on the host, broadcast on the group's device.
  const auto on_device = torch::TensorOptions(torch::kFloat64).device(device_);
  std::vector<torch::Tensor> length = {
      torch::full({1}, static_cast<double>(text.size()), on_device)};
  wait_for(group_->pg->broadcast(length), *this, "the broadcast of rank 0's " + what);
  const auto n = static_cast<int64_t>(length[0].item<double>());
  torch::Tensor host = torch::zeros({std::max<int64_t>(n, 1)}, torch::kFloat64);
  if (rank() == 0) {
    double* h = host.data_ptr<double>();
    for (int64_t i = 0; i < n; ++i) h[i] = static_cast<unsigned char>(text[i]);
  }
  std::vector<torch::Tensor> bytes = {host.to(device_)};
  wait_for(group_->pg->broadcast(bytes), *this, "the broadcast of rank 0's " + what);
  host = bytes[0].to(torch::kCPU);
  std::string first(static_cast<size_t>(n), '\0');
  const double* b = host.data_ptr<double>();
  for (int64_t i = 0; i < n; ++i) first[i] = static_cast<char>(static_cast<int>(b[i]));
  const bool differs = first != text;
  if (!any(differs)) return;
  throw DistributedError(
      differs ? fmt::format("rank {} of {}: its {} differs from rank 0's, so the ranks would train "
                            "different things; start every rank with the same command and data.\n"
                            "  rank 0: {}\n  rank {}: {}", rank(), world_size(), what, first,
                            rank(), text)
              : fmt::format("rank {} of {}: another rank's {} differs from this rank's (its own "
                            "error shows both); start every rank with the same command and data",
                            rank(), world_size(), what));
}

}  // namespace gpt2
