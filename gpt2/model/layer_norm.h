#pragma once
/// LayerNorm over the last dimension with an optional bias, as nanoGPT's
/// (torch::nn::LayerNorm in LibTorch 1.13 cannot drop the bias alone).

#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace gpt2 {

/// Options for gpt2::LayerNorm.
struct LayerNormOptions {
  /* implicit */ LayerNormOptions(int64_t ndim) : ndim_(ndim) {}
  /// Size of the normalized (last) dimension.
  TORCH_ARG(int64_t, ndim);
  /// Whether to add a learned bias.
  TORCH_ARG(bool, bias) = true;
  /// Added to the variance for stability; 1e-5 as GPT-2.
  TORCH_ARG(double, eps) = 1e-5;
};

/// y = (x - mean) / sqrt(var + eps) * weight + bias over the last dimension.
/// x (*, ndim) -> y (*, ndim).
class LayerNormImpl : public torch::nn::Cloneable<LayerNormImpl> {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);

  /// Registers weight (ndim) and, if enabled, bias (ndim), and fills them
  /// with reset_parameters() unless a DeferInit is active.
  void reset() override;
  /// weight 1, bias 0.
  void reset_parameters();

  torch::Tensor forward(const torch::Tensor& input);

  /// Prints `gpt2::LayerNorm(ndim, eps=.., bias=..)`.
  void pretty_print(std::ostream& stream) const override;

  /// The options this module was built with.
  LayerNormOptions options;
  /// (ndim), the gain.
  torch::Tensor weight;
  /// (ndim); undefined when options.bias() is false.
  torch::Tensor bias;
};
TORCH_MODULE(LayerNorm);

}  // namespace gpt2
