#pragma once
/// Where attention keeps the keys and values of earlier positions, so that
/// incremental decoding runs each position once. The model holds none: a
/// decoder passes its own to GPTImpl::forward_hidden (gpt2/generate:
/// KVCache, one length for a batch; SlotCache, a slot per sequence).

#include <torch/types.h>

#include <cstddef>
#include <utility>

namespace gpt2 {

/// The keys and values a forward's attention layers write and read.
class KVStore {
 public:
  virtual ~KVStore() = default;
  /// Takes layer `layer`'s k, v (B, nh, T, hs) for the T new positions and
  /// returns the keys and values those queries attend over, (B, nh, S, hs)
  /// each with S >= T; when S > T the new positions are the last T of
  /// them unless the forward's mask says otherwise.
  virtual std::pair<torch::Tensor, torch::Tensor> append(size_t layer, const torch::Tensor& k,
                                                         const torch::Tensor& v) = 0;
};

}  // namespace gpt2
