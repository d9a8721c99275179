#include "gpt2/model/init.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/modules/embedding.h>

#include <optional>
#include <unordered_set>

#include "gpt2/model/modules.h"

namespace gpt2 {
namespace {

// Writes each tensor at most once and records what it wrote.
class Initializer {
 public:
  Initializer(const GPTConfig& config, const torch::nn::Module* position_embedding)
      : config_(config), position_embedding_(position_embedding) {
    if (config.init().seed()) {
      generator_ = at::make_generator<at::CPUGeneratorImpl>(*config.init().seed());
    }
  }

  void operator()(torch::nn::Module& module) {
    const InitOptions& init = config_.init();
    if (auto* linear = module.as<Linear>()) {
      const bool residual = linear->options.residual_scale();
      normal(linear->weight, residual ? config_.residual_std() : init.std());
      fill(linear->bias, 0.0);
    } else if (auto* embedding = module.as<torch::nn::Embedding>()) {
      const bool position = &module == position_embedding_;
      normal(embedding->weight, position ? init.wpe_std() : init.std());
    } else if (auto* norm = module.as<LayerNorm>()) {
      fill(norm->weight, 1.0);
      fill(norm->bias, 0.0);
    }
  }

  std::vector<InitRecord> records;

 private:
  bool first_visit(const torch::Tensor& t) {
    return t.defined() && done_.insert(t.unsafeGetTensorImpl()).second;
  }

  void normal(torch::Tensor& t, double std) {
    if (!first_visit(t)) return;
    torch::NoGradGuard no_grad;
    if (generator_ && !t.device().is_cpu()) {
      // Draw on the CPU so a seed gives the same tensors on every device.
      auto cpu = torch::empty(t.sizes(), t.options().device(torch::kCPU));
      t.copy_(cpu.normal_(0.0, std, generator_));
    } else {
      t.normal_(0.0, std, generator_);
    }
    // std 0 (the zero scheme) still draws, so the generator advances as under
    // the other schemes and every other tensor is the one they draw; the
    // fill makes the result exactly +0 whatever normal_ does with std 0.
    if (std == 0.0) t.zero_();
    records.push_back({t, 0.0, std});
  }

  void fill(torch::Tensor& t, double value) {
    if (!first_visit(t)) return;
    torch::NoGradGuard no_grad;
    t.fill_(value);
    records.push_back({t, value, 0.0});
  }

  const GPTConfig& config_;
  const torch::nn::Module* position_embedding_;
  c10::optional<at::Generator> generator_;
  std::unordered_set<const c10::TensorImpl*> done_;
};

}  // namespace

std::vector<InitRecord> init_weights(torch::nn::Module& root, const GPTConfig& config,
                                     const torch::nn::Module* position_embedding) {
  Initializer initializer(config, position_embedding);
  root.apply([&initializer](torch::nn::Module& module) { initializer(module); });
  return std::move(initializer.records);
}

}  // namespace gpt2
