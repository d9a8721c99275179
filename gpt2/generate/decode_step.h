#pragma once
/// A decoding step of fixed shapes (SlotCache::step over every position),
/// run as a CUDA graph on a GPU: the step's kernels are captured once per
/// batch size and replayed for each token, so a token costs one graph
/// launch instead of a launch per op (about 150 for GPT-2 124M). Elsewhere
/// it runs the same step eagerly.

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "gpt2/generate/slot_cache.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// How a decoder runs its steps once the prompt is in the KV cache.
enum class DecodeSteps {
  kDynamic,  ///< over the filled positions only: shapes grow by a position a token (the CPU's)
  kFixed,    ///< over every position, masked: one shape for all tokens (SlotCache::step)
  kGraphed,  ///< kFixed, captured once as a CUDA graph and replayed per token (CUDA only)
};

/// Whether this build can capture CUDA graphs: a LibTorch with CUDA.
bool cuda_graphs_built();

/// Steps of `model` over `cache` (both must outlive this), each over the
/// first rows of its slots and all capacity() positions. With `graphed`,
/// on a CUDA device, in a build with CUDA graphs, the first step of each
/// row count is captured (after two eager warm-up steps on a side stream;
/// they write the same positions with the same values) into a graph whose
/// memory comes from its own pool, and each later step of that count
/// replays it. The cache's tensors never move, so a graph stays valid
/// while sequences join and leave. A capture that fails leaves the steps
/// eager and says why (why_not_graphed()).
class DecodeStep {
 public:
  DecodeStep(GPTImpl& model, SlotCache& cache, bool graphed);
  ~DecodeStep();
  DecodeStep(const DecodeStep&) = delete;
  DecodeStep& operator=(const DecodeStep&) = delete;

  /// idx (rows, 1) int64 on the model's device, slot r's token at position
  /// cache.length(r) for r < rows -> the logits of the next token (rows,
  /// vocab_size), a tensor of its own. The lengths are synced first and not
  /// advanced (SlotCache::advance). Ids are not checked here.
  torch::Tensor operator()(const torch::Tensor& idx);

  /// Whether the steps replay a CUDA graph.
  bool graphed() const;
  /// Graphs captured so far (one per row count).
  int64_t captures() const { return captures_; }
  /// Why steps asked to be graphed run eagerly ("" when they are graphed,
  /// or were not asked to be).
  const std::string& why_not_graphed() const { return why_not_; }

 private:
  struct Graph;  // the captured step, where this build has CUDA graphs
  torch::Tensor replay(const torch::Tensor& idx);

  GPTImpl& model_;
  SlotCache& cache_;
  bool want_graph_;
  std::map<int64_t, std::unique_ptr<Graph>> graphs_;  // by row count
  int64_t captures_ = 0;
  std::string why_not_;
};

}  // namespace gpt2
