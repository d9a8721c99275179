// DataParallel over c10d: TCPStore rendezvous, ProcessGroupGloo collectives.
// ProcessGroupGloo.hpp needs USE_C10D_GLOO (the torch_cpu CMake target
// defines it) and Debian's libgloo-dev (gpt2/CMakeLists.txt checks for it).
#include "gpt2/train/distributed.h"

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdlib>
#include <new>

#include "gpt2/ops/torch_compat.h"
#include "gpt2/train/detail/store_greeting.h"

namespace gpt2 {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// An exception's message without c10's backtrace (its lines after the first).
std::string first_line(const std::exception& e) {
  const std::string what = e.what();
  return what.substr(0, what.find('\n'));
}

// What `e` says a peer sent that no rendezvous store sends, or "" when it
// is no such reply: a length beyond memory (the store client allocates what
// the peer announced, so a stranger's bytes become bad_alloc), a reply of
// the wrong kind (1.13) or a wrong answer to the ping 2.x's client opens
// with. The message built on it points at the port, the likely cause.
std::string stranger_reply(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return "a length larger than memory";
  const std::string what = first_line(e);
  if (what.find("response is expected") != std::string::npos) return what;
  if (what.find("invalid nonce returned") != std::string::npos) return "a wrong answer to a ping";
  return "";
}

bool is_stranger_reply(const std::exception& e) { return !stranger_reply(e).empty(); }

std::string stranger(const DistEnv& env, const std::string& reply) {
  return fmt::format("the program at {}:{} answered as no rendezvous store does ({}): is another "
                     "program listening on MASTER_PORT {}? choose a free port for rank 0",
                     env.master_addr, env.master_port, reply, env.master_port);
}

std::string stranger(const DistEnv& env, const std::exception& e) {
  return stranger(env, stranger_reply(e));
}

std::string where(const DistEnv& env) {
  return fmt::format("rank {} of {} (MASTER_ADDR {}, MASTER_PORT {})", env.rank, env.world_size,
                     env.master_addr, env.master_port);
}

// A peer that speaks before it is asked is no rendezvous store, and 1.13's
// store client would read its bytes on a thread of its own, where a failed
// allocation ends the process: refused before the client connects.
void refuse_a_speaking_peer(const DistEnv& env) {
  const std::string bytes = detail::unasked_bytes(
      env.master_addr, static_cast<uint16_t>(env.master_port), std::chrono::milliseconds(200));
  if (bytes.empty()) return;
  std::string shown;
  for (const char c : bytes.substr(0, bytes.find_first_of("\r\n"))) {
    shown += (c >= 0x20 && c < 0x7f) ? std::string(1, c) : fmt::format("\\x{:02x}", static_cast<uint8_t>(c));
  }
  throw DistributedError(fmt::format(
      "{}: {}", where(env), stranger(env, fmt::format("a greeting before any question: '{}'", shown))));
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
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(env.master_port);
  o.isServer = env.rank == 0 && !env.agent_store;
  o.numWorkers = env.agent_store ? c10::nullopt : c10::optional<size_t>(env.world_size);
  o.waitWorkers = !env.agent_store;
  o.timeout = timeout;
  compat::use_classic_store_server(o);
  if (!o.isServer) refuse_a_speaking_peer(env);
  const auto start = Clock::now();
  try {
    group_->store = c10::make_intrusive<c10d::PrefixStore>(
        env.store_prefix, c10::make_intrusive<c10d::TCPStore>(env.master_addr, o));
  } catch (const std::exception& e) {
    // A server that fails before the timeout could not listen; one that
    // fails at it waited for peers in vain.
    const double waited = seconds_since(start);
    const bool timed_out = waited >= 0.9 * static_cast<double>(timeout.count()) / 1e3;
    std::string why;
    if (!o.isServer && is_stranger_reply(e)) {
      why = stranger(env, e);
    } else if (o.isServer && !timed_out) {
      why = fmt::format("cannot serve the rendezvous store on port {} (is another program on it? "
                        "choose another MASTER_PORT)", env.master_port);
    } else if (o.isServer) {
      why = fmt::format("not all {} ranks joined within {:.0f} s", env.world_size, waited);
    } else {
      why = fmt::format("cannot reach the rendezvous store at {}:{} within {:.0f} s (is rank 0 "
                        "running, and MASTER_ADDR its address?)", env.master_addr,
                        env.master_port, waited);
    }
    if (!o.isServer && is_stranger_reply(e)) throw DistributedError(fmt::format("{}: {}", where(env), why));
    throw DistributedError(fmt::format("{}: {}: {}", where(env), why, first_line(e)));
  }
  try {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(gloo_device(env));
    options->threads = 2;
    group_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(
        group_->store, static_cast<int>(env.rank), static_cast<int>(env.world_size), options);
  } catch (const std::exception& e) {
    if (!o.isServer && is_stranger_reply(e)) {  // rank 0 serving the store talks to itself
      throw DistributedError(fmt::format("{}: {}", where(env), stranger(env, e)));
    }
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
