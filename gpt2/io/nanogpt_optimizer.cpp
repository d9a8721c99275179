// nanoGPT's AdamW state: its positions turned into names, then onto the
// library's optimizer by name and shape.
#include <fmt/format.h>

#include <map>
#include <string>

#include "gpt2/error.h"
#include "gpt2/io/detail/nanogpt_pickle.h"
#include "gpt2/io/nanogpt.h"
#include "gpt2/io/state_dict.h"
#include "gpt2/ops/torch_compat.h"

namespace gpt2 {
namespace detail {

using Kind = PValue::Kind;

std::optional<double> number(const PValue* v) {
  if (v && v->kind == Kind::kFloat) return v->f;
  if (v && v->kind == Kind::kInt) return static_cast<double>(v->i);
  return std::nullopt;
}

std::optional<double> scalar(const detail::TorchArchive& archive, const PValue* v) {
  if (v && v->kind == Kind::kTensor && v->tensor->sizes.empty()) {
    return archive.tensor(*v->tensor).to(torch::kDouble).item<double>();
  }
  return number(v);
}

NanoGPTAdamW read_nanogpt_adamw(const detail::TorchArchive& archive, const PValue& opt,
                                const GPTConfig& config, const StateDict& weights,
                                std::vector<std::string>& problems) {
  NanoGPTAdamW out;
  const auto names = nanogpt_param_groups(config);
  const PValue* groups = opt.get("param_groups");
  const PValue* state = opt.get("state");
  if (!groups || groups->kind != Kind::kList || groups->items.size() != 2 || !state ||
      state->kind != Kind::kDict || (!state->entries.empty() && !state->int_keys)) {
    problems.push_back(
        "optimizer is not AdamW's state_dict over nanoGPT's two parameter groups "
        "(state keyed by int, param_groups a list of 2)");
    return out;
  }
  for (size_t g = 0; g < 2; ++g) {
    const PValue& group = *groups->items[g];
    const PValue* params = group.get("params");
    const PValue* betas = group.get("betas");
    NanoGPTAdamW::Group o;
    const auto lr = number(group.get("lr")), wd = number(group.get("weight_decay")),
               eps = number(group.get("eps"));
    const PValue* amsgrad = group.get("amsgrad");
    if (!params || params->kind != Kind::kList || !lr || !wd || !eps || !betas ||
        betas->kind != Kind::kTuple || betas->items.size() != 2 || !number(betas->items[0].get()) ||
        !number(betas->items[1].get()) || (amsgrad && amsgrad->kind == Kind::kBool && amsgrad->b)) {
      problems.push_back(
          fmt::format("optimizer param_groups[{}] is not an AdamW group "
                      "(params, lr, betas, eps, weight_decay; amsgrad off)",
                      g));
      continue;
    }
    o.lr = *lr, o.weight_decay = *wd, o.eps = *eps;
    o.beta1 = *number(betas->items[0].get()), o.beta2 = *number(betas->items[1].get());
    if (params->items.size() != names[g].size()) {
      problems.push_back(
          fmt::format("optimizer param_groups[{}] holds {} parameters; nanoGPT's "
                      "{} group of this model holds {}",
                      g, params->items.size(), g == 0 ? "decay" : "no-decay", names[g].size()));
      continue;
    }
    o.names = names[g];
    for (size_t j = 0; j < params->items.size(); ++j) {
      const PValue& id = *params->items[j];
      const std::string& name = names[g][j];
      if (id.kind != Kind::kInt) {
        problems.push_back(
            fmt::format("optimizer param_groups[{}] params[{}] is not an int", g, j));
        continue;
      }
      const PValue* s = state->get(std::to_string(id.i));
      if (!s) continue;  // no step taken yet
      const PValue* m = s->kind == Kind::kDict ? s->get("exp_avg") : nullptr;
      const PValue* v = s->kind == Kind::kDict ? s->get("exp_avg_sq") : nullptr;
      // A count: -1 when absent, refused below past 2^53 (not a count a float holds).
      const double step =
          s->kind == Kind::kDict ? scalar(archive, s->get("step")).value_or(-1) : -1;
      const auto found = weights.find(name);
      if (found == weights.end()) continue;  // the state-dict check names it
      const auto& want = found->second;
      const auto fits = [&](const PValue* t) {
        return t && t->kind == Kind::kTensor && t->tensor->sizes == want.sizes().vec();
      };
      if (!fits(m) || !fits(v) || !(step >= 0 && step <= 9007199254740992.0)) {
        problems.push_back(
            fmt::format("optimizer state {} (position {} of group {}, {}) is not "
                        "AdamW's step, exp_avg and exp_avg_sq of shape {}",
                        id.i, j, g, name, c10::str(want.sizes())));
        continue;
      }
      if (archive.damaged(*m->tensor) || archive.damaged(*v->tensor)) {
        problems.push_back(
            fmt::format("optimizer state for {}: a moment's zip record fails its "
                        "CRC-32",
                        name));
        continue;
      }
      out.state[name] = {static_cast<int64_t>(step), archive.tensor(*m->tensor).clone(),
                         archive.tensor(*v->tensor).clone()};
    }
    out.groups.push_back(std::move(o));
  }
  return out;
}

}  // namespace detail

std::array<std::vector<std::string>, 2> nanogpt_param_groups(const GPTConfig& c) {
  std::array<std::vector<std::string>, 2> out;
  const auto add = [&](const std::string& name, bool matrix) {
    if (matrix || c.bias() || name.substr(name.size() - 5) != ".bias")
      out[matrix ? 0 : 1].push_back(name);
  };
  add("transformer.wte.weight", true);
  add("transformer.wpe.weight", true);
  for (int64_t i = 0; i < c.n_layer(); ++i) {
    const std::string h = fmt::format("transformer.h.{}.", i);
    for (const char* m : {"ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"}) {
      const bool linear = std::string(m).find("c_") != std::string::npos;
      add(h + m + ".weight", linear);
      add(h + m + ".bias", false);
    }
  }
  add("transformer.ln_f.weight", false);
  add("transformer.ln_f.bias", false);
  return out;
}

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
                                       name == names.end()
                                           ? "that is not the model's"
                                           : name->second + " the file's groups lack"));
        continue;
      }
      const auto* fg = &state.groups[from->second];
      if (group_of[g] && group_of[g] != fg) {
        problems.push_back(
            fmt::format("optimizer group {} mixes nanoGPT's decay and no-decay "
                        "parameters ({})",
                        g, name->second));
      }
      group_of[g] = fg;
      const auto m = state.state.find(name->second);
      if (m == state.state.end()) continue;
      if (!m->second.exp_avg.sizes().equals(p.sizes()) ||
          !m->second.exp_avg_sq.sizes().equals(p.sizes())) {
        problems.push_back(
            fmt::format("optimizer state for {}: exp_avg {}, exp_avg_sq {}, "
                        "parameter {}",
                        name->second, c10::str(m->second.exp_avg.sizes()),
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
