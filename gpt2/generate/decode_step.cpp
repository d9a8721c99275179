#include "gpt2/generate/decode_step.h"

#include <fmt/format.h>
#include <torch/autograd.h>

#include <utility>

#include "gpt2/error.h"

#ifdef GPT2_WITH_CUDA_GRAPHS
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace gpt2 {

bool cuda_graphs_built() {
#ifdef GPT2_WITH_CUDA_GRAPHS
  return true;
#else
  return false;
#endif
}

#ifdef GPT2_WITH_CUDA_GRAPHS
struct DecodeStep::Graph {
  at::cuda::CUDAGraph graph;
  torch::Tensor input, output;  // the captured step's idx (B, 1) and logits (B, V)
  int64_t layout = -1;          // the cache's layout it was captured over
};
#else
struct DecodeStep::Graph {};
#endif

DecodeStep::DecodeStep(GPTImpl& model, KVCache& cache, bool graphed)
    : model_(model), cache_(cache), want_graph_(graphed) {
  if (!cache.fixed_shapes()) {
    throw InputError("DecodeStep needs a KV cache made with fixed_shapes");
  }
  const torch::Device device = model.lm_head->weight.device();
  if (!graphed) return;
  if (!cuda_graphs_built()) {
    why_not_ = "this build's LibTorch has no CUDA, so no CUDA graphs";
  } else if (!device.is_cuda()) {
    why_not_ = fmt::format("CUDA graphs run on CUDA devices; the model is on {}", device.str());
  }
}

DecodeStep::~DecodeStep() = default;

bool DecodeStep::graphed() const { return want_graph_ && why_not_.empty(); }

torch::Tensor DecodeStep::operator()(const torch::Tensor& idx) {
  torch::NoGradGuard no_grad;
  cache_.sync_step();  // checks the room for one more position
  torch::Tensor logits = graphed() ? replay(idx) : model_.forward_step(idx, cache_);
  cache_.advance(1);
  return logits;
}

#ifdef GPT2_WITH_CUDA_GRAPHS

torch::Tensor DecodeStep::replay(const torch::Tensor& idx) {
  if (!graph_ || graph_->layout != cache_.layout() || !graph_->input.sizes().equals(idx.sizes())) {
    graph_.reset();  // its pool goes back before the next capture takes one
    auto g = std::make_unique<Graph>();
    const torch::Device device = model_.lm_head->weight.device();
    c10::cuda::CUDAGuard on_device(device);
    g->input = idx.clone();
    g->layout = cache_.layout();
    // Warm-up and capture on a side stream, as CUDA graphs require; the
    // warm-up steps create cuBLAS's handles and workspaces outside the graph.
    // The streams meet through the host (a capture is rare; where CUDA's
    // event class lives differs between LibTorch releases).
    const auto main = c10::cuda::getCurrentCUDAStream(device.index());
    const auto side = c10::cuda::getStreamFromPool(false, device.index());
    main.synchronize();  // the input and the cache are written
    try {
      c10::cuda::CUDAStreamGuard on_side(side);
      for (int i = 0; i < 2; ++i) model_.forward_step(g->input, cache_);
      g->graph.capture_begin();
      try {
        g->output = model_.forward_step(g->input, cache_);
      } catch (...) {
        try {
          g->graph.capture_end();  // ends the stream's capture; the graph is dropped
        } catch (const c10::Error&) {
        }
        throw;
      }
      g->graph.capture_end();
    } catch (const c10::Error& e) {
      const std::string what = e.what_without_backtrace();
      why_not_ = fmt::format("capturing the decoding step failed: {}",
                             what.substr(0, what.find('\n')));
      side.synchronize();
      return model_.forward_step(idx, cache_);
    }
    side.synchronize();  // the warm-up steps are done
    graph_ = std::move(g);
    ++captures_;
  }
  if (idx.scalar_type() != torch::kLong || idx.device() != graph_->input.device()) {
    throw InputError(fmt::format("a decoding step takes idx {} int64 on {}, got {} on {}",
                                 c10::str(graph_->input.sizes()), graph_->input.device().str(),
                                 c10::toString(idx.scalar_type()), idx.device().str()));
  }
  graph_->input.copy_(idx);
  graph_->graph.replay();
  return graph_->output.clone();  // the graph writes its output again next step
}

#else

torch::Tensor DecodeStep::replay(const torch::Tensor& idx) { return model_.forward_step(idx, cache_); }

#endif

}  // namespace gpt2
