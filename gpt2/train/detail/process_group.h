#pragma once
// The c10d process group DataParallel runs its collectives on: Gloo for
// CPU tensors, NCCL for CUDA tensors where this build has it
// (GPT2_WITH_NCCL). The CUDA and NCCL headers stay in process_group.cpp.
// ProcessGroupGloo.hpp needs USE_C10D_GLOO, which LibTorch's torch_cpu
// target defines, and Gloo's headers (gpt2/CMakeLists.txt finds them).

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <type_traits>

#include "gpt2/train/distributed.h"

namespace gpt2::detail {

/// What every process group here derives from, with allreduce and
/// broadcast: c10d::Backend from LibTorch 2.0, c10d::ProcessGroup in 1.13.
using Collectives = std::conditional_t<std::is_base_of_v<c10d::Backend, c10d::ProcessGroupGloo>,
                                       c10d::Backend, c10d::ProcessGroup>;

/// Forms the group of `env`'s ranks over `store` for collectives on
/// `device`, with `timeout` for each collective: Gloo (2 threads, on the
/// interface PyTorch's init_process_group would choose) for the CPU; NCCL
/// for a CUDA device with an index, which becomes this process's current
/// CUDA device, as torchrun scripts do with torch.cuda.set_device. The
/// backend is process_group_backend(device)'s; throws what it throws, a
/// DistributedError when the NCCL that LibTorch loaded is not the one
/// whose nccl.h this build read, and whatever c10d throws.
c10::intrusive_ptr<Collectives> make_process_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                   const DistEnv& env, const torch::Device& device,
                                                   std::chrono::milliseconds timeout);

/// Ends an NCCL group's communicators, as destroy_process_group does
/// (2.x's ProcessGroupNCCL warns when it is destroyed without it); nothing
/// for Gloo.
void shut_down(Collectives& group);

}  // namespace gpt2::detail
