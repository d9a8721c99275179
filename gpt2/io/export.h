#pragma once
/// TorchScript export: a standalone program that C++ apps without this
/// library (torch::jit::load) and Python (torch.jit.load) can run.

#include <torch/csrc/jit/api/module.h>

#include <string>

#include "gpt2/model/gpt.h"

namespace gpt2 {

/// A torch::jit::Module mirroring the model's tree and names, holding the
/// model's own tensors (the tied one registered as both
/// transformer.wte.weight and lm_head.weight), with
/// `forward(idx (B, T) int64) -> logits (B, T, vocab_size)` compiled from
/// TorchScript source by Module::define. T stays dynamic up to block_size;
/// dropout is left out (an exported program is for inference).
torch::jit::Module to_torchscript(const GPTImpl& model);

/// Saves to_torchscript(model) to `path` atomically. The model is not
/// changed. Throws FileError naming `path`.
void export_torchscript(const GPTImpl& model, const std::string& path);

}  // namespace gpt2
