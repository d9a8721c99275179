#pragma once
// Small host tensors a decoding step sends to its device: the step's last
// tokens, the slots' lengths, the draws' settings.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/util/Exception.h>

namespace gpt2::detail {

// `host` in pinned memory, or undefined where none can be had (then the
// copy goes from pageable memory, as before: slower, never wrong).
inline at::Tensor pinned(const at::Tensor& host) {
  try {
    return host.pin_memory();
  } catch (const c10::Error&) {
    return {};
  }
}

// `host` (a CPU tensor) on `device`. To a GPU the copy is queued from pinned
// memory and the host goes on at once: a copy from pageable memory would wait
// for the device to finish the work queued before it, so the step's launches
// could not overlap it. torch's pinned allocator keeps the block until the
// copy is done.
inline at::Tensor to_device(const at::Tensor& host, const c10::Device& device) {
  if (device.is_cuda() && host.device().is_cpu()) {
    if (const at::Tensor p = pinned(host); p.defined()) return p.to(device, /*non_blocking=*/true);
  }
  return host.to(device);
}

// into.copy_(host), queued the same way where `into` is on a GPU.
inline void copy_from_host(at::Tensor into, const at::Tensor& host) {
  if (into.is_cuda() && host.device().is_cpu()) {
    if (const at::Tensor p = pinned(host); p.defined()) {
      into.copy_(p, /*non_blocking=*/true);
      return;
    }
  }
  into.copy_(host);
}

}  // namespace gpt2::detail
