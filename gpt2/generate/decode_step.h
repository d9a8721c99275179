#pragma once
/// A decoding step of fixed shapes (GPTImpl::forward_step), run as a CUDA
/// graph on a GPU: the step's kernels are captured once and replayed for
/// each token, so a token costs one graph launch instead of a launch per op
/// (about 150 for GPT-2 124M). Elsewhere it runs the same step eagerly.

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "gpt2/model/gpt.h"
#include "gpt2/model/kv_cache.h"

namespace gpt2 {

/// How a decoder runs its steps once the prompt is in the KV cache.
enum class DecodeSteps {
  kDynamic,  ///< over the filled positions only: shapes grow by a position a token (the CPU's)
  kFixed,    ///< over every slot, masked: one shape for all tokens (GPTImpl::forward_step)
  kGraphed,  ///< kFixed, captured once as a CUDA graph and replayed per token (CUDA only)
};

/// Whether this build can capture CUDA graphs: a LibTorch with CUDA.
bool cuda_graphs_built();

/// Steps of `model` over `cache` (made with fixed_shapes; both must outlive
/// this). With `graphed`, on a CUDA device, in a build with CUDA graphs,
/// the first step is captured (after two eager warm-up steps on a side
/// stream; they write the same slot with the same values) into a graph
/// whose memory comes from its own pool, and each later step replays it;
/// the capture is taken again when the cache's layout() changes (rows
/// joined or left). A capture that fails leaves the steps eager and says
/// why (why_not_graphed()).
class DecodeStep {
 public:
  DecodeStep(GPTImpl& model, KVCache& cache, bool graphed);
  ~DecodeStep();
  DecodeStep(const DecodeStep&) = delete;
  DecodeStep& operator=(const DecodeStep&) = delete;

  /// idx (B, 1) int64 on the model's device, each row's token at position
  /// cache.length() -> the logits of the next token (B, vocab_size), a
  /// tensor of its own; the cache advances by one. Ids are not checked here
  /// (GPTImpl::forward_step).
  torch::Tensor operator()(const torch::Tensor& idx);

  /// Whether the steps replay a CUDA graph.
  bool graphed() const;
  /// Graphs captured so far.
  int64_t captures() const { return captures_; }
  /// Why steps asked to be graphed run eagerly ("" when they are graphed,
  /// or were not asked to be).
  const std::string& why_not_graphed() const { return why_not_; }

 private:
  struct Graph;  // the captured step, where this build has CUDA graphs
  torch::Tensor replay(const torch::Tensor& idx);

  GPTImpl& model_;
  KVCache& cache_;
  bool want_graph_;
  std::unique_ptr<Graph> graph_;
  int64_t captures_ = 0;
  std::string why_not_;
};

}  // namespace gpt2
