#include "gpt2/train/optim.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/ops/memory.h"
#include "gpt2/ops/settings.h"
#include "gpt2/ops/torch_compat.h"
#include "gpt2/train/detail/adamw_kernel.h"

#ifndef _OPENMP
#error "build this file with -fopenmp: without it at::parallel_for runs on one thread (gpt2/CMakeLists.txt)"
#endif

namespace gpt2 {
namespace {

// Elements per task: large enough that the pool's overhead is noise, small
// enough that both threads get work on a LayerNorm-sized tensor.
constexpr int64_t kGrain = 1 << 15;

bool dense_float_cpu(const torch::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat &&
         t.layout() == torch::kStrided && t.is_contiguous();
}

detail::AdamWCoefficients coefficients(const torch::optim::AdamWOptions& o, int64_t step) {
  const auto [beta1, beta2] = o.betas();
  detail::AdamWCoefficients c;
  c.decay = static_cast<float>(1 - o.lr() * o.weight_decay());
  c.beta1 = static_cast<float>(beta1);
  c.one_minus_beta1 = static_cast<float>(1 - beta1);
  c.beta2 = static_cast<float>(beta2);
  c.one_minus_beta2 = static_cast<float>(1 - beta2);
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
  c.sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2));
  c.eps = static_cast<float>(o.eps());
  c.neg_step_size = static_cast<float>(-o.lr() / bias_correction1);
  return c;
}

// Adam's moments for `p`: zeros like it, on the library's large-tensor
// memory where it is a float32 CPU tensor.
torch::Tensor zeros_like_param(const torch::Tensor& p) {
  if (dense_float_cpu(p)) return empty_large(p.sizes(), torch::kFloat).zero_();
  return torch::zeros_like(p, torch::MemoryFormat::Preserve);
}

// The AdamW state of `p` in an optimizer's `states`, made as torch makes it
// on the first step: zero moments, step 0.
template <class States>
torch::optim::AdamWParamState& adamw_state(States& states, const torch::Tensor& p) {
  auto& slot = states[compat::optimizer_state_key(p)];
  if (!slot) {
    auto fresh = std::make_unique<torch::optim::AdamWParamState>();
    fresh->exp_avg(zeros_like_param(p));
    fresh->exp_avg_sq(zeros_like_param(p));
    slot = std::move(fresh);
  }
  return static_cast<torch::optim::AdamWParamState&>(*slot);
}

// The 2-norm of the gradients' 2-norms, as torch clips. On the CPU
// torch::nn::utils::clip_grad_norm_'s ops, a norm per tensor; where every
// gradient is on one GPU, Python's torch.nn.utils.clip_grad_norm_'s,
// _foreach_norm, a launch or two for all of them (nanoGPT's clip on a GPU).
torch::Tensor total_norm(const std::vector<torch::Tensor>& grads) {
  const bool one_gpu = std::all_of(grads.begin(), grads.end(), [&](const torch::Tensor& g) {
    return g.is_cuda() && g.device() == grads[0].device() && g.layout() == torch::kStrided;
  });
  std::vector<torch::Tensor> norms;
  if (one_gpu) {
    norms = at::_foreach_norm(grads, 2);
  } else {
    for (const auto& g : grads) norms.push_back(g.norm(2));
  }
  if (norms.size() == 1) return norms[0];
  return one_gpu ? at::linalg_vector_norm(torch::stack(norms), 2) : torch::stack(norms).norm(2);
}

}  // namespace

ParamGroups param_groups(const GPTImpl& model) {
  ParamGroups groups;
  for (const auto& p : model.unique_parameters()) {
    (p.dim() >= 2 ? groups.decay : groups.no_decay).push_back(p);
  }
  return groups;
}

bool FusedAdamW::fusable() const {
  for (const auto& group : param_groups()) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params()) {
      if (p.grad().defined() && !(dense_float_cpu(p) && dense_float_cpu(p.grad()))) return false;
    }
  }
  return true;
}

bool FusedAdamW::torch_fusable() const {
  if (!compat::has_fused_adamw()) return false;
  c10::optional<torch::Device> device;
  for (const auto& group : param_groups()) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const auto& g = p.grad();
      if (p.scalar_type() != torch::kFloat || g.scalar_type() != torch::kFloat ||
          g.layout() != torch::kStrided || g.device() != p.device() || (device && *device != p.device())) {
        return false;
      }
      device = p.device();
    }
  }
  return device.has_value();
}

void FusedAdamW::torch_step(float grad_scale) {
  torch::NoGradGuard no_grad;
  KernelTeam team;  // on the CPU, torch's kernel runs on gpt2's kernel threads
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
    std::vector<float> counts;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& s = adamw_state(state(), p);
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(s.exp_avg());
      exp_avg_sqs.push_back(s.exp_avg_sq());
      s.step(s.step() + 1);
      counts.push_back(static_cast<float>(s.step()));
    }
    if (params.empty()) continue;
    // This step's number for each tensor, on the device: one fill (or one
    // copy, where tensors joined at different steps) instead of one launch
    // per tensor.
    const auto options_of_steps = params[0].options().dtype(torch::kFloat);
    const bool same = std::all_of(counts.begin(), counts.end(),
                                  [&](float c) { return c == counts[0]; });
    const torch::Tensor numbers =
        same ? torch::full({static_cast<int64_t>(counts.size())}, counts[0], options_of_steps)
             : torch::tensor(counts, torch::kFloat).to(options_of_steps.device());
    const std::vector<torch::Tensor> steps = numbers.unbind(0);
    const auto [beta1, beta2] = options.betas();
    // The clip's factor f as the kernel's divisor 1/f, read with each
    // gradient instead of a pass that multiplies them first.
    const torch::Tensor divisor =
        grad_scale == 1.0f ? torch::Tensor()
                           : torch::full({}, 1.0f / grad_scale, params[0].options());
    compat::fused_adamw(params, grads, exp_avgs, exp_avg_sqs, steps, options.lr(), beta1, beta2,
                        options.weight_decay(), options.eps(), divisor);
  }
}

double FusedAdamW::clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  // torch's takes any number: a negative bound would flip every gradient,
  // NaN would make every weight NaN.
  if (!(max_norm > 0)) {
    throw Error(fmt::format("FusedAdamW::clip_grad_norm: max_norm must be positive (infinity: no "
                            "clip), got {}", max_norm));
  }
  // The factor will scale every gradient of this optimizer: refuse a list
  // torch's clip would have scaled otherwise.
  std::unordered_set<const void*> mine;
  for (const auto& group : param_groups()) {
    for (const auto& p : group.params()) mine.insert(p.unsafeGetTensorImpl());
  }
  std::unordered_set<const void*> given;
  for (const auto& p : params) {
    if (!mine.count(p.unsafeGetTensorImpl()) || !given.insert(p.unsafeGetTensorImpl()).second) {
      throw Error(fmt::format("FusedAdamW::clip_grad_norm: parameter {} of {} (shape {}) is {}",
                              given.size(), params.size(), c10::str(p.sizes()),
                              mine.count(p.unsafeGetTensorImpl()) ? "listed twice"
                                                                  : "not this optimizer's"));
    }
  }
  if (given.size() != mine.size()) {
    throw Error(fmt::format("FusedAdamW::clip_grad_norm: {} parameters given, the optimizer has {}",
                            given.size(), mine.size()));
  }
  grad_scale_ = 1;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad().data());
  }
  if (grads.empty()) return 0.0;
  const torch::Tensor total = total_norm(grads);
  const torch::Tensor factor = torch::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0);
  // One read from the device for both.
  const torch::Tensor both = torch::stack({total, factor}).to(torch::kCPU, torch::kDouble);
  grad_scale_ = static_cast<float>(both[1].item<double>());
  return both[0].item<double>();
}

torch::Tensor FusedAdamW::step(LossClosure closure) {
  const float scale = std::exchange(grad_scale_, 1.0f);
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  if (torch_fusable()) {
    torch_step(scale);
    return loss;
  }
  torch::NoGradGuard no_grad;
  if (!fusable()) {
    for (auto& group : param_groups()) {
      for (auto& p : group.params()) {
        if (p.grad().defined() && scale != 1.0f) p.mutable_grad().mul_(scale);
      }
    }
    torch::optim::AdamW::step();
    return loss;
  }
  KernelTeam team;  // the update runs on gpt2's kernel threads
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& s = adamw_state(state(), p);
      s.step(s.step() + 1);
      auto c = coefficients(options, s.step());  // decay 1 - lr * 0 = 1 exactly
      c.grad_scale = scale;
      float* w = p.data_ptr<float>();
      const float* g = p.grad().data_ptr<float>();
      float* m = s.exp_avg().data_ptr<float>();
      float* v = s.exp_avg_sq().data_ptr<float>();
      at::parallel_for(0, p.numel(), kGrain, [&](int64_t begin, int64_t end) {
        detail::adamw_update(w + begin, g + begin, m + begin, v + begin, end - begin, c);
      });
    }
  }
  return loss;
}

void FusedAdamW::zero_grad(bool set_to_none) {
  grad_scale_ = 1;
  for (auto& group : param_groups()) {
    for (auto& p : group.params()) {
      torch::Tensor& grad = p.mutable_grad();
      if (set_to_none) {
        grad.reset();
      } else if (grad.defined()) {  // as LibTorch 1.13's zero_grad()
        grad.detach_();
        grad.zero_();
      }
    }
  }
}

std::unique_ptr<FusedAdamW> configure_optimizers(const GPTImpl& model,
                                                 const torch::optim::AdamWOptions& options) {
  const auto [beta1, beta2] = options.betas();
  for (const auto& [name, value, ok] : {std::tuple{"lr", options.lr(), options.lr() >= 0},
                                        {"eps", options.eps(), options.eps() >= 0},
                                        {"beta1", beta1, beta1 >= 0 && beta1 < 1},
                                        {"beta2", beta2, beta2 >= 0 && beta2 < 1},
                                        {"weight_decay", options.weight_decay(),
                                         options.weight_decay() >= 0}}) {
    if (!ok) {
      throw InputError(fmt::format("configure_optimizers: AdamW's {} must be {}, got {}", name,
                                   name[0] == 'b' ? "in [0, 1)" : ">= 0", value));
    }
  }
  ParamGroups groups = param_groups(model);
  auto no_decay = std::make_unique<torch::optim::AdamWOptions>(options);
  no_decay->weight_decay(0.0);
  std::vector<torch::optim::OptimizerParamGroup> param_groups_;
  param_groups_.emplace_back(groups.decay,
                             std::make_unique<torch::optim::AdamWOptions>(options));
  param_groups_.emplace_back(groups.no_decay, std::move(no_decay));
  return std::make_unique<FusedAdamW>(std::move(param_groups_), options);
}

}  // namespace gpt2
