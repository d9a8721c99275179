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
  torch::Tensor input, output;  // the captured step's idx (rows, 1) and logits (rows, V)
};
#else
struct DecodeStep::Graph {};
#endif

DecodeStep::DecodeStep(GPTImpl& model, SlotCache& cache, bool graphed)
    : model_(model), cache_(cache), want_graph_(graphed) {
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
  const torch::Device here = model_.lm_head->weight.device();
  if (!idx.defined() || idx.dim() != 2 || idx.size(1) != 1 ||
      idx.scalar_type() != torch::kLong || idx.device() != here) {
    throw InputError(fmt::format(
        "a decoding step takes idx (rows, 1) int64 on {}, got {}", here.str(),
        idx.defined() ? c10::str(c10::toString(idx.scalar_type()), " ", idx.sizes(), " on ",
                                 idx.device())
                      : std::string("an undefined tensor")));
  }
  cache_.sync(idx.size(0));  // checks the room for one more position
  return graphed() ? replay(idx) : cache_.step(model_, idx, cache_.capacity());
}

#ifdef GPT2_WITH_CUDA_GRAPHS

torch::Tensor DecodeStep::replay(const torch::Tensor& idx) {
  const int64_t rows = idx.size(0), span = cache_.capacity();
  auto& graph = graphs_[rows];
  if (!graph) {
    auto g = std::make_unique<Graph>();
    const torch::Device device = model_.lm_head->weight.device();
    c10::cuda::CUDAGuard on_device(device);
    g->input = idx.clone();
    // Warm-up and capture on a side stream, as CUDA graphs require; the
    // warm-up steps create cuBLAS's handles and workspaces outside the graph.
    // The streams meet through the host (a capture is rare; where CUDA's
    // event class lives differs between LibTorch releases).
    const auto main = c10::cuda::getCurrentCUDAStream(device.index());
    const auto side = c10::cuda::getStreamFromPool(false, device.index());
    main.synchronize();  // the input and the cache are written
    try {
      c10::cuda::CUDAStreamGuard on_side(side);
      for (int i = 0; i < 2; ++i) cache_.step(model_, g->input, span);
      g->graph.capture_begin();
      try {
        g->output = cache_.step(model_, g->input, span);
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
      graphs_.erase(rows);
      return cache_.step(model_, idx, span);
    }
    side.synchronize();  // the warm-up steps are done
    graph = std::move(g);
    ++captures_;
  }
  graph->input.copy_(idx);
  graph->graph.replay();
  return graph->output.clone();  // the graph writes its output again next step
}

#else

torch::Tensor DecodeStep::replay(const torch::Tensor& idx) {
  return cache_.step(model_, idx, cache_.capacity());
}

#endif

}  // namespace gpt2
