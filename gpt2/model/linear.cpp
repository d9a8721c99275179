#include "gpt2/model/linear.h"

#include <torch/autograd.h>

#include <ostream>

#include "gpt2/model/config.h"

#include "gpt2/model/defer_init.h"
#include "gpt2/model/kernels/huge_pages.h"
#include "gpt2/model/kernels/matmul.h"

namespace gpt2 {

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) {
  reset();
}

void LinearImpl::reset() {
  weight = register_parameter(
      "weight", detail::empty_large({options.out_features(), options.in_features()}));
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
  if (packed_.format != WeightFormat::kFloat32 && !torch::GradMode::is_enabled() &&
      input.scalar_type() == torch::kFloat && input.device().is_cpu()) {
    return packed_linear(input, packed(), bias);
  }
  return gpt2::linear(input, weight, bias);
}

void LinearImpl::set_weight_format(WeightFormat format) {
  packed_ = PackedWeight();
  packed_version_ = -1;
  packed_from_ = nullptr;
  if (format == WeightFormat::kFloat32) return;
  packed_.format = format;
  packed();
}

const PackedWeight& LinearImpl::packed() {
  // The weight changed since it was packed (a step, a load, a clone): again.
  if (weight._version() != packed_version_ || weight.data_ptr() != packed_from_) {
    packed_ = pack_weight(weight, packed_.format);
    packed_version_ = weight._version();
    packed_from_ = weight.data_ptr();
  }
  return packed_;
}

int64_t LinearImpl::weight_bytes() const {
  return packed_.data.defined() ? packed_.bytes() : static_cast<int64_t>(weight.nbytes());
}

void LinearImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "gpt2::Linear(in_features=" << options.in_features()
         << ", out_features=" << options.out_features() << ", bias=" << options.bias()
         << ", residual_scale=" << options.residual_scale() << ")";
}

}  // namespace gpt2
