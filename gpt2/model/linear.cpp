#include "gpt2/model/linear.h"

#include <torch/autograd.h>

#include <ostream>

#include "gpt2/model/config.h"
#include "gpt2/model/defer_init.h"

namespace gpt2 {

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) {
  reset();
}

void LinearImpl::reset() {
  weight = register_parameter(
      "weight", ops::empty({options.out_features(), options.in_features()}));
  if (options.bias()) {
    bias = register_parameter("bias", torch::empty({options.out_features()}));
  } else {
    bias = torch::Tensor();
  }
  if (!DeferInit::active()) reset_parameters();
}

void LinearImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  weight.normal_(0.0, InitOptions().std());
  if (bias.defined()) bias.zero_();
}

torch::Tensor LinearImpl::forward(const torch::Tensor& input) {
  return ops::linear(input, weight, bias, packed_);
}

void LinearImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "gpt2::Linear(in_features=" << options.in_features()
         << ", out_features=" << options.out_features() << ", bias=" << options.bias()
         << ", residual_scale=" << options.residual_scale() << ")";
}

}  // namespace gpt2
