// nanoGPT's AdamW state onto the library's optimizer, by name and shape.
#include <fmt/format.h>

#include <map>

#include "gpt2/error.h"
#include "gpt2/io/nanogpt.h"
#include "gpt2/io/state_dict.h"
#include "gpt2/ops/torch_compat.h"

namespace gpt2 {

void restore_nanogpt_optimizer(const NanoGPTAdamW& state, const GPTImpl& model,
                               torch::optim::AdamW& optimizer, const std::string& source) {
  std::map<const void*, std::string> names;  // by TensorImpl
  for (const auto& item : model.named_unique_parameters()) {
    names[item.value().unsafeGetTensorImpl()] = item.key();
  }
  std::map<std::string, size_t> file_group;  // name -> nanoGPT group
  for (size_t g = 0; g < state.groups.size(); ++g) {
    for (const auto& name : state.groups[g].names) file_group[name] = g;
  }
  std::vector<std::string> problems;
  std::vector<const NanoGPTAdamW::Group*> group_of(optimizer.param_groups().size(), nullptr);
  std::vector<std::pair<torch::Tensor, const NanoGPTAdamW::Moments*>> moments;
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    for (const auto& p : optimizer.param_groups()[g].params()) {
      const auto name = names.find(p.unsafeGetTensorImpl());
      const auto from = name == names.end() ? file_group.end() : file_group.find(name->second);
      if (from == file_group.end()) {
        problems.push_back(fmt::format("optimizer group {} holds a parameter {}", g,
                                       name == names.end() ? "that is not the model's"
                                                           : name->second + " the file's groups lack"));
        continue;
      }
      const auto* fg = &state.groups[from->second];
      if (group_of[g] && group_of[g] != fg) {
        problems.push_back(fmt::format("optimizer group {} mixes nanoGPT's decay and no-decay "
                                       "parameters ({})", g, name->second));
      }
      group_of[g] = fg;
      const auto m = state.state.find(name->second);
      if (m == state.state.end()) continue;
      if (!m->second.exp_avg.sizes().equals(p.sizes()) || !m->second.exp_avg_sq.sizes().equals(p.sizes())) {
        problems.push_back(fmt::format("optimizer state for {}: exp_avg {}, exp_avg_sq {}, "
                                       "parameter {}", name->second, c10::str(m->second.exp_avg.sizes()),
                                       c10::str(m->second.exp_avg_sq.sizes()), c10::str(p.sizes())));
        continue;
      }
      moments.emplace_back(p, &m->second);
    }
  }
  if (!problems.empty()) throw_load_problems(source, problems);
  for (size_t g = 0; g < group_of.size(); ++g) {
    if (!group_of[g]) continue;
    auto& o = static_cast<torch::optim::AdamWOptions&>(optimizer.param_groups()[g].options());
    o.lr(group_of[g]->lr).weight_decay(group_of[g]->weight_decay).eps(group_of[g]->eps);
    o.betas({group_of[g]->beta1, group_of[g]->beta2});
  }
  optimizer.state().clear();
  for (const auto& [p, m] : moments) {
    auto s = std::make_unique<torch::optim::AdamWParamState>();
    s->step(m->step);
    s->exp_avg(m->exp_avg.to(p.options()).contiguous());
    s->exp_avg_sq(m->exp_avg_sq.to(p.options()).contiguous());
    optimizer.state()[compat::optimizer_state_key(p)] = std::move(s);
  }
}

}  // namespace gpt2
