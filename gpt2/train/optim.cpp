#include "gpt2/train/optim.h"

namespace gpt2 {

ParamGroups param_groups(const GPTImpl& model) {
  ParamGroups groups;
  for (const auto& p : model.unique_parameters()) {
    (p.dim() >= 2 ? groups.decay : groups.no_decay).push_back(p);
  }
  return groups;
}

std::unique_ptr<torch::optim::AdamW> configure_optimizers(
    const GPTImpl& model, const torch::optim::AdamWOptions& options) {
  ParamGroups groups = param_groups(model);
  auto no_decay = std::make_unique<torch::optim::AdamWOptions>(options);
  no_decay->weight_decay(0.0);
  std::vector<torch::optim::OptimizerParamGroup> param_groups_;
  param_groups_.emplace_back(groups.decay,
                             std::make_unique<torch::optim::AdamWOptions>(options));
  param_groups_.emplace_back(groups.no_decay, std::move(no_decay));
  return std::make_unique<torch::optim::AdamW>(std::move(param_groups_), options);
}

}  // namespace gpt2
