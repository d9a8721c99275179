#include "gpt2/model/layer_norm.h"

#include <ostream>

#include "gpt2/model/defer_init.h"
#include "gpt2/ops/ops.h"

namespace gpt2 {

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options_) : options(options_) {
  reset();
}

void LayerNormImpl::reset() {
  weight = register_parameter("weight", torch::empty({options.ndim()}));
  if (options.bias()) {
    bias = register_parameter("bias", torch::empty({options.ndim()}));
  } else {
    bias = torch::Tensor();
  }
  if (!DeferInit::active()) reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  weight.fill_(1.0);
  if (bias.defined()) bias.zero_();
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& input) {
  return ops::layer_norm(input, weight, bias, options.eps());
}

void LayerNormImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "gpt2::LayerNorm(" << options.ndim()
         << ", eps=" << options.eps() << ", bias=" << options.bias() << ")";
}

}  // namespace gpt2
