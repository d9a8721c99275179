#pragma once
/// Optimizer set-up as nanoGPT's configure_optimizers: AdamW with weight
/// decay on matrices only, each tensor (the tied one included) exactly once;
/// and the step done as one fused pass per parameter.

#include <torch/optim/adamw.h>

#include <memory>
#include <vector>

#include "gpt2/model/gpt.h"

namespace gpt2 {

/// The model's unique parameters split by whether weight decay applies.
struct ParamGroups {
  /// dim >= 2: Linear weights, wte (= lm_head), wpe.
  std::vector<torch::Tensor> decay;
  /// dim < 2: biases and LayerNorm gains.
  std::vector<torch::Tensor> no_decay;
};

/// Splits model.unique_parameters() into decay / no_decay.
ParamGroups param_groups(const GPTImpl& model);

/// torch::optim::AdamW whose step() updates each float32 parameter in one
/// fused pass over (weight, grad, m, v) instead of torch::optim::AdamW's
/// eight ops and a temporary. On LibTorch 2.4 and later that pass is
/// torch's own fused kernel (what torch.optim.AdamW(fused=True) runs), on
/// the CPU as on a GPU, when every gradient is dense float32 on one
/// device; on 1.13, which has none on the CPU, it is the library's
/// (gpt2/train/detail/adamw_kernel.h). Both run on the kernel threads
/// (gpt2/ops/settings.h). The options, the per-parameter state
/// (AdamWParamState), save() and load() are torch's, so optimizer state
/// moves freely between the two; the numbers agree with
/// torch::optim::AdamW's to float rounding (tests/train/optim_test.cpp).
/// With amsgrad, or a gradient that fits neither pass, step() is
/// torch::optim::AdamW::step.
class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;

  torch::Tensor step(LossClosure closure = nullptr) override;

  /// As PyTorch's zero_grad(set_to_none=True), its default since 2.0 and
  /// the call nanoGPT makes: drops every gradient, so the next backward
  /// stores its gradients instead of adding them into zeroed ones (a pass
  /// to zero and a pass to add saved per tensor).
  /// With false, zeros them in place as LibTorch 1.13's
  /// torch::optim::Optimizer::zero_grad() does. Optimizer::zero_grad is not
  /// virtual: called through an Optimizer&, LibTorch's own runs (1.13
  /// zeros, 2.x drops by default).
  void zero_grad(bool set_to_none = true);

  /// torch::nn::utils::clip_grad_norm_(params, max_norm), the scaling
  /// folded into the next step(): returns the same total norm (before
  /// clipping, summed in the order of `params`) and computes the same
  /// factor, min(1, max_norm / (norm + 1e-6)), but leaves the gradients as
  /// they are; step() applies it to each gradient as it reads it, which
  /// saves a pass over every gradient. The library's pass multiplies, so
  /// its update equals clip_grad_norm_ then step() to the bit, and it
  /// leaves the gradients unclipped. torch's fused kernel divides by
  /// 1/factor (its grad_scale), equal to float rounding, and stores the
  /// clipped gradients as torch's clip leaves them; a step() that fuses
  /// nothing scales the gradients first. Where every gradient is on one
  /// GPU the norms are torch's _foreach_norm, as Python's clip_grad_norm_
  /// takes them there (LibTorch's clip takes one norm per tensor, which
  /// may round the total differently).
  /// `params` must be this optimizer's parameters, each once, in any
  /// order, and max_norm positive (a gpt2::Error otherwise; torch's takes
  /// a negative bound and flips the gradients). The next step() or
  /// zero_grad() ends the factor.
  double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

 private:
  bool fusable() const;
  // Every gradient dense float32 on one device, and torch has a fused AdamW.
  bool torch_fusable() const;
  void torch_step(float grad_scale);

  float grad_scale_ = 1;  // from clip_grad_norm, for the next step()
};

/// FusedAdamW over param_groups(model): the decay group uses
/// options.weight_decay(), the other 0. nanoGPT uses lr 6e-4,
/// betas (0.9, 0.95), weight_decay 0.1. Throws InputError naming the
/// option for an lr, eps or weight_decay below 0 or NaN, or a beta outside
/// [0, 1).
std::unique_ptr<FusedAdamW> configure_optimizers(const GPTImpl& model,
                                                 const torch::optim::AdamWOptions& options);

}  // namespace gpt2
