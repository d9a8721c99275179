#pragma once
/// A scope in which a module runs in eval mode (dropout off), its own mode
/// restored when the scope ends: for inference inside a training run.

#include <torch/nn/module.h>

namespace gpt2 {

/// Puts `module` in eval mode for the object's lifetime.
class EvalMode {
 public:
  explicit EvalMode(torch::nn::Module& module)
      : module_(module), was_training_(module.is_training()) {
    module_.eval();
  }
  ~EvalMode() { module_.train(was_training_); }
  EvalMode(const EvalMode&) = delete;
  EvalMode& operator=(const EvalMode&) = delete;

 private:
  torch::nn::Module& module_;
  bool was_training_;
};

}  // namespace gpt2
