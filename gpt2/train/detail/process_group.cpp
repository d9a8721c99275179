// Which c10d process group a device takes, and forming it: Gloo on the
// CPU, NCCL on CUDA GPUs where gpt2/CMakeLists.txt found it in LibTorch
// (GPT2_WITH_NCCL, with LibTorch's USE_C10D_NCCL and the nccl.h it needs).
#include "gpt2/train/detail/process_group.h"

#include <fmt/format.h>
#include <torch/version.h>

#include <cstdlib>
#include <string>
#include <utility>

#ifdef GPT2_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace gpt2 {

bool has_nccl() {
#ifdef GPT2_WITH_NCCL
  return true;
#else
  return false;
#endif
}

std::string process_group_backend(const torch::Device& device, bool nccl) {
  if (device.is_cpu()) return "gloo";
  if (device.is_cuda() && nccl) return "nccl";
  if (device.is_cuda()) {
    throw DistributedError(fmt::format(
        "data-parallel training on {} runs on NCCL, and this LibTorch ({}) has no NCCL: gpt2 was "
        "built without it (its CMake finds ProcessGroupNCCL only in a LibTorch built with CUDA "
        "and NCCL, as PyPI's torch is; docs/gpu.md); train on one GPU without a launcher, or on "
        "CPUs (Gloo)", device.str(), TORCH_VERSION));
  }
  throw DistributedError(fmt::format("data-parallel training on {}: no process group runs there "
                                     "(Gloo runs on CPUs, NCCL on CUDA GPUs)", device.str()));
}

namespace detail {
namespace {

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

#ifdef GPT2_WITH_NCCL
// ProcessGroupNCCL's Options hold an ncclConfig_t, whose size is nccl.h's:
// the nccl.h this build read and the NCCL LibTorch loaded must agree on
// it, or this code and LibTorch's lay the options out differently.
void check_nccl_version() {
  const std::string loaded = c10d::getNcclVersion();
  const std::string read = fmt::format("{}.{}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  if (loaded.rfind(fmt::format("{}.{}.", NCCL_MAJOR, NCCL_MINOR), 0) != 0) {
    throw DistributedError(fmt::format(
        "this LibTorch ({}) runs NCCL {}, but gpt2 was built with the nccl.h of NCCL {}, whose "
        "structures may differ: rebuild with the nccl.h of LibTorch's NCCL (pip's nvidia-nccl "
        "package beside torch, which gpt2/CMakeLists.txt looks at first)",
        TORCH_VERSION, loaded, read));
  }
}

// Group::shutdown(), where this LibTorch's ProcessGroupNCCL has it.
template <typename Group, typename = void>
struct HasShutdown : std::false_type {};
template <typename Group>
struct HasShutdown<Group, std::void_t<decltype(std::declval<Group&>().shutdown())>>
    : std::true_type {};

template <typename Group>
void shut_down_if_it_can(Group& group) {
  if constexpr (HasShutdown<Group>::value) group.shutdown();
}
#endif

}  // namespace

c10::intrusive_ptr<Collectives> make_process_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                   const DistEnv& env, const torch::Device& device,
                                                   std::chrono::milliseconds timeout) {
  const int rank = static_cast<int>(env.rank), size = static_cast<int>(env.world_size);
  const std::string backend = process_group_backend(device);
#ifdef GPT2_WITH_NCCL
  if (backend == "nccl") {
    TORCH_CHECK(device.has_index(), "make_process_group: NCCL needs a CUDA device with an index, got ",
                device);
    check_nccl_version();
    c10::cuda::set_device(device.index());
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
  }
#endif
  TORCH_CHECK(backend == "gloo", "make_process_group: no ", backend, " in this build");
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(gloo_device(env));
  options->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

void shut_down(Collectives& group) {
#ifdef GPT2_WITH_NCCL
  if (auto* nccl = dynamic_cast<c10d::ProcessGroupNCCL*>(&group)) shut_down_if_it_can(*nccl);
#else
  (void)group;
#endif
}

}  // namespace detail
}  // namespace gpt2
