#pragma once
/// GPT: the GPT-2 language model laid out as nanoGPT's, with the token
/// embedding and the output head sharing one tensor.
///
/// References: Radford et al. 2019, "Language Models are Unsupervised
/// Multitask Learners" (GPT-2); Karpathy's nanoGPT model.py (layout, names).

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/pimpl.h>
#include <torch/ordered_dict.h>

#include <string>
#include <vector>

#include "gpt2/model/config.h"
#include "gpt2/model/init.h"
#include "gpt2/model/kv_store.h"
#include "gpt2/model/modules.h"

namespace gpt2 {

/// nanoGPT's `transformer` ModuleDict as a typed module: embeddings, blocks,
/// final norm. It is built around the output head's weight, which becomes
/// wte's weight. Not cloneable on its own; clone the GPT.
class TransformerImpl : public torch::nn::Module {
 public:
  /// `tied_weight` (vocab_size, n_embd) is registered as wte.weight.
  TransformerImpl(const GPTConfig& config, const torch::Tensor& tied_weight);

  /// Token embedding (vocab_size, n_embd); its weight is lm_head.weight.
  torch::nn::Embedding wte{nullptr};
  /// Position embedding (block_size, n_embd).
  torch::nn::Embedding wpe{nullptr};
  /// Dropout on the summed embeddings.
  torch::nn::Dropout drop{nullptr};
  /// The n_layer blocks, registered as h.0 ... h.{n_layer-1}.
  torch::nn::ModuleList h{nullptr};
  /// Final LayerNorm before the head.
  LayerNorm ln_f{nullptr};
};
TORCH_MODULE(Transformer);

/// What GPT::forward returns.
struct GPTOutput {
  /// (B, T, vocab_size).
  torch::Tensor logits;
  /// Scalar mean cross entropy; undefined when no targets were given.
  torch::Tensor loss;
};

/// GPT-2. Parameter names match nanoGPT's and Hugging Face's GPT2LMHeadModel:
/// transformer.{wte, wpe, h.i.{ln_1, attn.{c_attn, c_proj}, ln_2,
/// mlp.{c_fc, c_proj}}, ln_f}, lm_head.
class GPTImpl : public torch::nn::Cloneable<GPTImpl> {
 public:
  /// Validates the config (ConfigError, before allocating anything; the
  /// memory check for configs from files and flags is
  /// check_fits_in_memory, gpt2/io/model_source.h), builds the modules and runs
  /// init_weights with config.init(): every tensor is written once. Under a
  /// DeferInit it writes nothing.
  explicit GPTImpl(const GPTConfig& config);

  /// A model whose tensors are allocated but not written, for callers that
  /// overwrite every tensor right away (clone, checkpoint load, importers):
  /// the constructor under a DeferInit.
  static std::shared_ptr<GPTImpl> uninitialized(const GPTConfig& config);

  /// Builds the tied modules and, unless a DeferInit is active, initializes
  /// them (reset_parameters).
  void reset() override;

  /// Redraws every parameter by config.init(): init_weights over the whole
  /// model, wpe as the position embedding. Returns what it wrote.
  std::vector<InitRecord> reset_parameters();

  /// A deep copy on `device` (or this model's), tie kept: the copy's lm_head
  /// and wte share one tensor, separate from this model's.
  std::shared_ptr<torch::nn::Module> clone(
      const c10::optional<torch::Device>& device = c10::nullopt) const override;

  /// idx (B, T) int64 -> logits (B, T, vocab_size); with targets (B, T)
  /// int64 also the mean cross entropy, positions with target -1 ignored.
  /// Throws InputError on bad shapes, dtypes or token ids.
  GPTOutput forward(const torch::Tensor& idx, const torch::Tensor& targets = {});

  /// forward(idx, targets).loss without the logits, what training needs:
  /// lm_head and the loss run as one op (ops::head_loss), which on a GPU
  /// or under autocast never makes the (B, T, vocab_size) logits of the
  /// batch. Equal to forward's loss, and its gradients to forward's, to
  /// float rounding. Throws InputError as forward does.
  torch::Tensor loss(const torch::Tensor& idx, const torch::Tensor& targets);

  /// Inference: idx (B, T) -> logits (B, vocab_size) for the last position
  /// only, computing the head once per row instead of T times.
  torch::Tensor forward_last(const torch::Tensor& idx);
  /// idx (B, T) -> the final norm's output (B, T, n_embd), what lm_head
  /// reads: for callers that need the head on some positions only.
  torch::Tensor forward_hidden(const torch::Tensor& idx);

  /// Incremental decoding, the blocks over a store the caller keeps
  /// (gpt2/generate: a KVCache, a SlotCache with a slot per sequence): idx
  /// (B, T) at position ids `positions` (B, T) int64, their keys and
  /// values handed to `store`, each query attending over what the store
  /// returns where `mask` (true: may not look; (B or 1, 1, T, S) bool) is
  /// false, or causally when `mask` is undefined (a query at position i of
  /// the T new sees the S - T keys before them and those up to i). -> the final norm's output (B, T, n_embd). It reads nothing
  /// back from the device, so a CUDA graph can capture it: it checks
  /// shapes, dtypes and devices (InputError), not ids (check_token_ids
  /// first) or positions (each below block_size).
  torch::Tensor forward_hidden(const torch::Tensor& idx, const torch::Tensor& positions,
                               KVStore& store, const torch::Tensor& mask);

  /// idx (B, T) -> token + position embeddings (B, T, n_embd), the
  /// residual stream entering block 0. Validates idx like forward.
  torch::Tensor embed(const torch::Tensor& idx);

  /// Block i of transformer.h, typed.
  Block block(size_t i) const;

  /// Every parameter once, in named_parameters() order, under its first name
  /// (the tied matrix as transformer.wte.weight). Use this, not
  /// parameters(), for counting, optimizing, decay and clipping.
  torch::OrderedDict<std::string, torch::Tensor> named_unique_parameters() const;
  /// The values of named_unique_parameters().
  std::vector<torch::Tensor> unique_parameters() const;
  /// Element count of unique_parameters(); non_embedding subtracts wpe, as
  /// nanoGPT does (wte stays: it is also the head).
  int64_t num_parameters(bool non_embedding = false) const;

  /// The config this model was built with.
  GPTConfig config;
  /// Embeddings, blocks and final norm.
  Transformer transformer{nullptr};
  /// Output head (n_embd -> vocab_size, no bias); weight is wte's.
  Linear lm_head{nullptr};

 private:
  void build();
  // embed / forward without checking idx, for callers that already did.
  // `head_follows`: lm_head's product of the tied weight follows in the same
  // forward (ops::tied_embedding's condition).
  torch::Tensor embed_checked(const torch::Tensor& idx, const torch::Tensor& pos,
                              bool head_follows = false);
  // The blocks and the final norm over x (B, T, C).
  torch::Tensor run_blocks(torch::Tensor x, KVStore* store, const torch::Tensor& mask);
  torch::Tensor hidden(const torch::Tensor& idx);
};

/// The handle apps pass around (what TORCH_MODULE(GPT) would declare), but
/// one that checks for emptiness: calling or dereferencing `GPT{nullptr}`
/// throws gpt2::Error instead of segfaulting (ModuleHolder::operator() does
/// not check). Note: `torch::load(model, path)` into a GPT of another width
/// silently loads mismatched tensors in LibTorch 1.13; load files with
/// load_weights / load_checkpoint / load_model (gpt2/io), which check.
class GPT : public torch::nn::ModuleHolder<GPTImpl> {
 public:
  using torch::nn::ModuleHolder<GPTImpl>::ModuleHolder;
  using Impl = GPTImpl;

  /// forward(idx, targets); throws gpt2::Error when empty.
  GPTOutput operator()(const torch::Tensor& idx, const torch::Tensor& targets = {});
  /// The model; throws gpt2::Error when empty.
  GPTImpl* operator->() { return checked(); }
  /// The model; throws gpt2::Error when empty.
  const GPTImpl* operator->() const { return checked(); }
  /// The model; throws gpt2::Error when empty.
  GPTImpl& operator*() { return *checked(); }
  /// The model; throws gpt2::Error when empty.
  const GPTImpl& operator*() const { return *checked(); }

 private:
  GPTImpl* checked() const;
};

/// A copy of `model`'s weights under `config`, which may differ from
/// model.config only where the weights still fit: a smaller block_size
/// keeps wpe's first rows (nanoGPT's crop_block_size, to fine-tune at a
/// shorter context), and any field that is not architecture (dropout, the
/// init settings the config records) is taken as given. The copy is tied
/// and in model's training mode. Throws ConfigError naming a field whose
/// change would need other weights, or a block_size above model's.
GPT with_config(const GPTImpl& model, const GPTConfig& config);

/// Throws InputError unless idx is a (B, T) int64 tensor with 1 <= T <=
/// block_size and every id in [0, vocab_size); the message names the first
/// offending id and its position.
void check_token_ids(const torch::Tensor& idx, const GPTConfig& config);

}  // namespace gpt2
