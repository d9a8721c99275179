#pragma once
// What differs between the LibTorch releases this library builds against
// (Debian 12's 1.13, Debian 13's 2.6, a pip or pytorch.org 2.x), in one
// place. Each difference is detected from LibTorch's own declarations where
// it can be, so a release in between needs no table of versions.

#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>
#include <torch/optim/optimizer.h>
#include <torch/version.h>

#include <cstddef>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace gpt2::compat {

// "2.6.0": the LibTorch the library was built against.
inline std::string torch_version() { return TORCH_VERSION; }

// The key of a parameter in torch::optim::Optimizer::state(): its
// TensorImpl's address printed as text in 1.13, the address itself in 2.x.
using OptimizerStateKey =
    typename std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

template <typename Key = OptimizerStateKey>
Key optimizer_state_key(const at::Tensor& parameter) {
  void* impl = parameter.unsafeGetTensorImpl();
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;  // as 1.13's c10::guts::to_string
    text << impl;
    return text.str();
  } else {
    return static_cast<Key>(impl);
  }
}

// c10d::TCPStoreOptions gained `useLibUV` (2.4), on by default; a LibTorch
// built without libuv (Debian 13's) then refuses to serve the store. Turns
// it off where the field exists: the store server 1.13 runs, on every
// release.
template <typename Options, typename = void>
struct HasUseLibUV : std::false_type {};
template <typename Options>
struct HasUseLibUV<Options, std::void_t<decltype(std::declval<Options&>().useLibUV)>>
    : std::true_type {};

template <typename Options>
void use_classic_store_server(Options& options) {
  if constexpr (HasUseLibUV<Options>::value) options.useLibUV = false;
}

namespace detail {

// 1.13: `DataPtr allocate(size_t) const`. 2.x: `DataPtr allocate(size_t)`
// and a pure `copy_data`. The base is a template parameter so that only the
// chosen form is checked against c10::Allocator.
template <typename Base, bool kConstAllocate>
struct AllocatorFor;

template <typename Base>
struct AllocatorFor<Base, true> : Base {
  c10::DataPtr allocate(size_t n) const final {
    return const_cast<AllocatorFor*>(this)->allocate_bytes(n);
  }
  virtual c10::DataPtr allocate_bytes(size_t n) = 0;
};

template <typename Base>
struct AllocatorFor<Base, false> : Base {
  c10::DataPtr allocate(size_t n) final { return allocate_bytes(n); }
  void copy_data(void* dest, const void* src, size_t count) const final {
    this->default_copy_data(dest, src, count);
  }
  virtual c10::DataPtr allocate_bytes(size_t n) = 0;
};

template <typename A>
constexpr bool const_allocate(c10::DataPtr (A::*)(size_t) const) { return true; }
template <typename A>
constexpr bool const_allocate(c10::DataPtr (A::*)(size_t)) { return false; }

}  // namespace detail

// A c10::Allocator for every release: derive from it and define
// `c10::DataPtr allocate_bytes(size_t n)` (and raw_deleter).
using Allocator =
    detail::AllocatorFor<c10::Allocator, detail::const_allocate(&c10::Allocator::allocate)>;

// Torch's own fused ops that 1.13 lacks: scaled_dot_product_attention
// (2.0), what the ops seam sends other devices' attention to, and the CPU
// kernel of _fused_adamw_, what torch.optim.AdamW(fused=True) runs (2.4;
// CUDA's is older). Defined in torch_compat.cpp, so that this header stays
// light.
bool has_sdpa();
bool has_fused_adamw();
// torch's scaled_dot_product_attention(q, k, v, attn_mask, dropout_p,
// is_causal): `allowed` is its boolean attn_mask (true where a query may
// see a key) or undefined. Throws c10::Error where has_sdpa() is false.
at::Tensor sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                const at::Tensor& allowed, double dropout_p, bool is_causal);
// sdpa(q, k, v, {}, 0, /*is_causal=*/true).
at::Tensor causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);
// The kernel scaled_dot_product_attention picks for q, k, v (B, nh, T, hs)
// without a mask: "flash", "cuDNN", "memory-efficient", "math" (no fused
// one fits), or "none: LibTorch 1.13 has no scaled_dot_product_attention".
std::string sdpa_choice(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                        bool is_causal);
// One AdamW step of every tensor of `params` by torch's fused kernel
// (amsgrad off, no maximize); `steps` are float scalars holding this
// step's number, 1 on the first (torch.optim's fused path counts them up
// before the call; the kernel reads them, on the tensors' device). A
// defined `grad_scale` (a float scalar on the tensors' device) divides
// each gradient as the kernel reads it, as AMP's unscaling does. Throws
// c10::Error where has_fused_adamw() is false.
void fused_adamw(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
                 at::TensorList exp_avg_sqs, at::TensorList steps, double lr, double beta1,
                 double beta2, double weight_decay, double eps, const at::Tensor& grad_scale = {});

// Autocast's state for one device type (kCPU or kCUDA), as torch.autocast
// reads and sets it: 1.13 has a pair of calls per device, 2.4 one taking
// the device type.
struct AutocastState {
  bool enabled = false;
  at::ScalarType dtype = at::kBFloat16;
};
AutocastState autocast_state(c10::DeviceType type);
void set_autocast_state(c10::DeviceType type, AutocastState state);

}  // namespace gpt2::compat
