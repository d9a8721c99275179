#pragma once
/// Linear with GPT-2's residual-scale flag: the c_proj layers that write into
/// the residual stream carry `residual_scale(true)`, and init_weights() reads
/// the flag to draw them with std / sqrt(N) (GPT-2 paper, section 2.3).

#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "gpt2/ops/ops.h"

namespace gpt2 {

/// Options for gpt2::Linear.
struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  /// Width of the input.
  TORCH_ARG(int64_t, in_features);
  /// Width of the output.
  TORCH_ARG(int64_t, out_features);
  /// Whether to add a learned bias.
  TORCH_ARG(bool, bias) = true;
  /// True for projections that add into the residual stream (attn.c_proj,
  /// mlp.c_proj): init draws their weight with the scaled std.
  TORCH_ARG(bool, residual_scale) = false;
};

/// y = x W^T + b, as torch::nn::Linear, plus the residual-scale flag.
/// x (*, in) -> y (*, out).
class LinearImpl : public torch::nn::Cloneable<LinearImpl> {
 public:
  LinearImpl(int64_t in_features, int64_t out_features)
      : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);

  /// Registers weight (out, in) and, if enabled, bias (out), and fills
  /// them with reset_parameters() unless a DeferInit is active.
  void reset() override;
  /// GPT-2's base init: weight ~ N(0, InitOptions().std()^2), bias 0, so a
  /// Linear built alone is usable. The residual scale needs the model's
  /// depth: init_weights() applies it, reading the flag.
  void reset_parameters();

  /// x W^T + b: ops::linear, through the packed copy where one is set.
  torch::Tensor forward(const torch::Tensor& input);

  /// Also keeps the weight as `format` (bf16 or int8) for products run
  /// without autograd (decoding, evaluation); kFloat32 drops the copy. The
  /// float32 weight stays: training, saving and export use it, and the copy
  /// is made again at the next product after it changes.
  void set_weight_format(WeightFormat format) { packed_.set_format(format, weight); }
  WeightFormat weight_format() const { return packed_.format(); }
  /// Bytes a product without autograd reads for the weight.
  int64_t weight_bytes() const { return packed_.bytes(weight); }

  /// Prints `gpt2::Linear(in_features=.., out_features=.., bias=.., residual_scale=..)`.
  void pretty_print(std::ostream& stream) const override;

  /// The options this module was built with, the flag included.
  LinearOptions options;
  /// (out_features, in_features), as torch.nn.Linear.
  torch::Tensor weight;
  /// (out_features); undefined when options.bias() is false.
  torch::Tensor bias;

 private:
  ops::PackedWeight packed_;
};
TORCH_MODULE(Linear);

}  // namespace gpt2
