#include "gpt2/model/shape.h"

#include <fmt/format.h>

namespace gpt2 {

std::string shape_of(const torch::Tensor& t) {
  return fmt::format("[{}]", fmt::join(t.sizes(), ", "));
}

}  // namespace gpt2
