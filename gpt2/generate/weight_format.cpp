#include "gpt2/generate/weight_format.h"

#include <unordered_set>

namespace gpt2 {

void set_weight_format(GPTImpl& model, WeightFormat format) {
  for (auto& module : model.modules(/*include_self=*/false)) {
    if (auto* linear = module->as<LinearImpl>()) linear->set_weight_format(format);
  }
}

int64_t decode_weight_bytes(const GPTImpl& model) {
  int64_t bytes = 0;
  std::unordered_set<const void*> linear_weights;
  for (const auto& module : model.modules(/*include_self=*/false)) {
    if (const auto* linear = module->as<LinearImpl>()) {
      if (linear_weights.insert(linear->weight.data_ptr()).second) bytes += linear->weight_bytes();
    }
  }
  for (const auto& p : model.unique_parameters()) {
    if (!linear_weights.count(p.data_ptr())) bytes += static_cast<int64_t>(p.nbytes());
  }
  return bytes;
}

}  // namespace gpt2
