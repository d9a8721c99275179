#include "gpt2/model/gpt.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unordered_set>

#include "gpt2/error.h"
#include "gpt2/fields/table.h"
#include "gpt2/model/input_checks.h"
#include "gpt2/ops/ops.h"

namespace gpt2 {

using detail::check_idx;
using detail::check_targets;

TransformerImpl::TransformerImpl(const GPTConfig& config, const torch::Tensor& tied_weight) {
  // EmbeddingImpl registers options._weight as its own `weight` parameter:
  // this is the re-registration that makes wte.weight and lm_head.weight one
  // tensor. wpe gets an unwritten tensor the same way; init_weights fills both.
  wte = register_module(
      "wte", torch::nn::Embedding(torch::nn::EmbeddingOptions(config.vocab_size(), config.n_embd())
                                      ._weight(tied_weight)));
  wpe = register_module(
      "wpe", torch::nn::Embedding(torch::nn::EmbeddingOptions(config.block_size(), config.n_embd())
                                      ._weight(ops::empty({config.block_size(), config.n_embd()}))));
  drop = register_module("drop", torch::nn::Dropout(config.dropout()));
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.n_layer(); ++i) h->push_back(Block(config));
  ln_f = register_module("ln_f", LayerNorm(LayerNormOptions(config.n_embd()).bias(config.bias())));
}

GPTImpl::GPTImpl(const GPTConfig& config_) : config(config_) {
  config.validate();
  reset();
}

std::shared_ptr<GPTImpl> GPTImpl::uninitialized(const GPTConfig& config) {
  DeferInit unwritten;
  return std::make_shared<GPTImpl>(config);
}

void GPTImpl::reset() {
  const bool write = !DeferInit::active();
  {
    DeferInit unwritten;  // init_weights (or the caller) writes every tensor once
    try {
      build();
    } catch (const c10::Error&) {  // a validated config: memory ran out
      throw ConfigError(fmt::format("a model of {} parameters ({:.1f} GB as float32) cannot be "
                                    "allocated", config.num_parameters(),
                                    4e-9 * static_cast<double>(config.num_parameters())));
    }
  }
  if (write) reset_parameters();
}

void GPTImpl::build() {
  // The head is built first so wte can be built around its weight, but it is
  // registered last, so names come in nanoGPT's order (transformer.*, lm_head).
  auto head = Linear(LinearOptions(config.n_embd(), config.vocab_size()).bias(false));
  transformer = register_module("transformer", Transformer(config, head->weight));
  lm_head = register_module("lm_head", head);
}

std::vector<InitRecord> GPTImpl::reset_parameters() {
  return init_weights(*this, config, transformer->wpe.get());
}

namespace {

// Writes every tensor of `source` once into `target`, a fresh model (tied
// by construction), as `value(name, tensor)`; Cloneable's member-wise copy
// would give wte and lm_head separate tensors. `target` takes source's
// requires_grad flags and training mode.
template <class Value>
void copy_parameters(const GPTImpl& source, GPTImpl& target, Value&& value) {
  torch::NoGradGuard no_grad;
  auto to_params = target.named_unique_parameters();
  for (const auto& item : source.named_unique_parameters()) {
    const torch::Tensor& from = item.value();
    torch::Tensor& to = to_params[item.key()];
    to.set_data(value(item.key(), from));
    to.requires_grad_(from.requires_grad());
  }
  target.train(source.is_training());
}

}  // namespace

std::shared_ptr<torch::nn::Module> GPTImpl::clone(
    const c10::optional<torch::Device>& device) const {
  auto copy = uninitialized(config);
  copy_parameters(*this, *copy, [&](const std::string&, const torch::Tensor& from) {
    return device ? from.to(*device, /*non_blocking=*/false, /*copy=*/true) : from.clone();
  });
  return copy;
}

torch::Tensor GPTImpl::embed(const torch::Tensor& idx) {
  check_idx(*this, idx);
  return embed_checked(idx, torch::arange(idx.size(1), idx.options()));
}

torch::Tensor GPTImpl::embed_checked(const torch::Tensor& idx, const torch::Tensor& pos,
                                     bool head_follows) {
  const torch::Tensor& wte = transformer->wte->weight;
  auto tok_emb = head_follows && lm_head->weight.is_same(wte)
                     ? ops::tied_embedding(idx, wte)     // (B, T, C)
                     : transformer->wte(idx);            // (B, T, C)
  auto pos_emb = transformer->wpe(pos);                  // (T, C) or (B, T, C)
  return transformer->drop(tok_emb + pos_emb);           // (B, T, C)
}

torch::Tensor GPTImpl::run_blocks(torch::Tensor x, KVStore* store, const torch::Tensor& mask) {
  size_t layer = 0;
  for (const auto& block : *transformer->h) {
    x = block->as<BlockImpl>()->forward(x, store, layer++, mask);
  }
  return transformer->ln_f(x);                           // (B, T, C)
}

torch::Tensor GPTImpl::hidden(const torch::Tensor& idx) {
  ops::ThreadScope threads;  // this forward's torch ops on the ops layer's threads
  const auto pos = torch::arange(idx.size(1), idx.options());     // (T)
  // Every caller applies lm_head to what this returns: the head follows.
  auto x = embed_checked(idx, pos, /*head_follows=*/true);        // (B, T, C)
  return run_blocks(x, nullptr, torch::Tensor());                 // (B, T, C)
}

GPTOutput GPTImpl::forward(const torch::Tensor& idx, const torch::Tensor& targets) {
  check_idx(*this, idx);  // before the targets, so idx's own problem is named
  if (targets.defined()) check_targets(targets, idx, config);
  auto logits = lm_head(hidden(idx));                    // (B, T, V)
  torch::Tensor loss;
  if (targets.defined()) {  // nanoGPT's F.cross_entropy(..., ignore_index=-1)
    loss = ops::cross_entropy(logits.view({-1, logits.size(-1)}), targets.reshape({-1}));
  }
  return {logits, loss};
}

torch::Tensor GPTImpl::loss(const torch::Tensor& idx, const torch::Tensor& targets) {
  check_idx(*this, idx);
  if (!targets.defined()) throw InputError("loss needs targets, got an undefined tensor");
  check_targets(targets, idx, config);
  auto x = hidden(idx);                                  // (B, T, C)
  return ops::head_loss(x.reshape({-1, x.size(-1)}), lm_head->weight, targets.reshape({-1}));
}

GPTImpl* GPT::checked() const {
  if (is_empty()) {
    throw Error("GPT{nullptr} holds no model: build one with GPT(config), or load one with "
                "gpt2::load_checkpoint / gpt2::load_model");
  }
  return impl_.get();
}

GPTOutput GPT::operator()(const torch::Tensor& idx, const torch::Tensor& targets) {
  return checked()->forward(idx, targets);
}

torch::Tensor GPTImpl::forward_last(const torch::Tensor& idx) {
  check_idx(*this, idx);
  auto x = hidden(idx);                                  // (B, T, C)
  return lm_head(x.select(1, x.size(1) - 1));            // (B, V)
}

torch::Tensor GPTImpl::forward_hidden(const torch::Tensor& idx) {
  check_idx(*this, idx);
  return hidden(idx);                                    // (B, T, C)
}

Block GPTImpl::block(size_t i) const {
  TORCH_CHECK(i < transformer->h->size(), "block ", i, " of ", transformer->h->size());
  return Block(transformer->h->ptr<BlockImpl>(i));
}

torch::OrderedDict<std::string, torch::Tensor> GPTImpl::named_unique_parameters() const {
  torch::OrderedDict<std::string, torch::Tensor> unique;
  std::unordered_set<const c10::TensorImpl*> seen;
  for (const auto& item : named_parameters()) {
    if (seen.insert(item.value().unsafeGetTensorImpl()).second) {
      unique.insert(item.key(), item.value());
    }
  }
  return unique;
}

std::vector<torch::Tensor> GPTImpl::unique_parameters() const {
  return named_unique_parameters().values();
}

int64_t GPTImpl::num_parameters(bool non_embedding) const {
  int64_t n = 0;
  for (const auto& p : unique_parameters()) n += p.numel();
  return non_embedding ? n - transformer->wpe->weight.numel() : n;
}

GPT with_config(const GPTImpl& model, const GPTConfig& config) {
  const int64_t block = config.block_size(), had = model.config.block_size();
  if (block > had) {
    throw ConfigError(fmt::format("block_size {} is longer than the model's {}: wpe has {} rows "
                                  "(a model can be cropped, not stretched)", block, had, had));
  }
  GPTConfig same_shape = config;
  same_shape.block_size(had);
  for (const auto& d : field_differences(same_shape, model.config)) {
    if (d.field.architecture) {
      throw ConfigError(fmt::format("{} {} differs from the model's {}: its weights have another "
                                    "shape or meaning", d.field.key, d.first, d.second));
    }
  }
  GPT copy(GPTImpl::uninitialized(config));
  const std::string wpe = "transformer.wpe.weight";
  copy_parameters(model, *copy, [&](const std::string& name, const torch::Tensor& from) {
    return (name == wpe ? from.slice(0, 0, block) : from).clone();
  });
  return copy;
}

}  // namespace gpt2
