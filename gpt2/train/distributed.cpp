// DataParallel over c10d: the rendezvous (detail/rendezvous.h), then
// ProcessGroupGloo collectives. ProcessGroupGloo.hpp needs USE_C10D_GLOO
// (the torch_cpu CMake target defines it) and Debian's libgloo-dev
// (gpt2/CMakeLists.txt checks for it).
#include "gpt2/train/distributed.h"

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <chrono>
#include <cstdlib>

#include "gpt2/train/detail/rendezvous.h"

namespace gpt2 {
namespace {

using detail::first_line;
using detail::where;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Gloo's transport device, chosen as PyTorch's init_process_group does:
// GLOO_SOCKET_IFNAME when set; loopback for a loopback master; otherwise the
// address this machine's hostname resolves to.
std::shared_ptr<gloo::transport::Device> gloo_device(const DistEnv& env) {
  if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME")) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(iface);
  }
  if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost" || env.master_addr == "::1") {
    return c10d::ProcessGroupGloo::createDeviceForHostname(env.master_addr);
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

struct DataParallel::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
  std::vector<std::pair<size_t, size_t>> buckets;  // of the tensors averaged
  std::vector<torch::Tensor> buffers;              // one flat float buffer per bucket, kept
  torch::Tensor scalar = torch::zeros({1}, torch::kFloat64);
};

DataParallel::DataParallel(const DistEnv& env, std::chrono::milliseconds timeout,
                           int64_t bucket_bytes)
    : env_(env), timeout_(timeout), bucket_bytes_(bucket_bytes), group_(std::make_unique<Group>()) {
  TORCH_CHECK(env.distributed(), "DataParallel needs WORLD_SIZE > 1, got ", env.world_size);
  group_->store = detail::open_store(env, timeout);
  try {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(gloo_device(env));
    options->threads = 2;
    group_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(
        group_->store, static_cast<int>(env.rank), static_cast<int>(env.world_size), options);
  } catch (const std::exception& e) {
    // Rank 0 serving the store talks to itself; a client may meet a stranger.
    const std::string strange = detail::serves_store(env) ? "" : detail::stranger_message(env, e);
    if (!strange.empty()) throw DistributedError(fmt::format("{}: {}", where(env), strange));
    throw DistributedError(fmt::format(
        "{}: the Gloo process group of {} ranks did not form within {} s (did every rank start, "
        "with the same MASTER_ADDR and MASTER_PORT?): {}",
        where(env), env.world_size, timeout.count() / 1000.0, first_line(e)));
  }
}

DataParallel::~DataParallel() = default;

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
    std::vector<torch::Tensor> flat = {torch::empty({n}, torch::kFloat32)};
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
      g.buffers.push_back(torch::empty({n}, torch::kFloat32));
      stats_.bytes += n * static_cast<int64_t>(sizeof(float));
    }
    stats_.buckets = static_cast<int64_t>(g.buckets.size());
  }
  TORCH_CHECK(g.buckets.back().second == tensors.size(), "average_gradients got ", tensors.size(),
              " tensors, its buckets hold ", g.buckets.back().second);
  // All buckets in flight at once: Gloo's threads work through them while
  // the next is copied in.
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
  stats_.calls += 1;
  stats_.seconds += seconds_since(start);
  return g.scalar.item<double>() / static_cast<double>(world_size());
}

double DataParallel::sum(double value) {
  std::vector<torch::Tensor> t = {torch::full({1}, value, torch::kFloat64)};
  wait_for(group_->pg->allreduce(t), *this, "an allreduce");
  return t[0].item<double>();
}

bool DataParallel::any(bool flag) { return sum(flag ? 1.0 : 0.0) > 0; }

void DataParallel::check_same(const std::string& what, const std::string& text) {
  // Rank 0's text to every rank: its length, then its bytes (as float64,
  // the type every collective here already uses; the texts are short).
  std::vector<torch::Tensor> length = {
      torch::full({1}, static_cast<double>(text.size()), torch::kFloat64)};
  wait_for(group_->pg->broadcast(length), *this, "the broadcast of rank 0's " + what);
  const auto n = static_cast<int64_t>(length[0].item<double>());
  std::vector<torch::Tensor> bytes = {torch::zeros({std::max<int64_t>(n, 1)}, torch::kFloat64)};
  if (rank() == 0) {
    for (int64_t i = 0; i < n; ++i) bytes[0][i] = static_cast<unsigned char>(text[i]);
  }
  wait_for(group_->pg->broadcast(bytes), *this, "the broadcast of rank 0's " + what);
  std::string first(static_cast<size_t>(n), '\0');
  const double* b = bytes[0].data_ptr<double>();
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
