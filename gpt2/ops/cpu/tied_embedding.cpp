#include "gpt2/ops/cpu/tied_embedding.h"

#include <torch/autograd.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "gpt2/ops/cpu/sgemm.h"

namespace gpt2::cpu {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct TiedEmbeddingFunction : torch::autograd::Function<TiedEmbeddingFunction> {
  static Tensor forward(AutogradContext* ctx, const Tensor& idx, const Tensor& weight) {
    const Tensor flat = idx.reshape({-1}).contiguous();
    ctx->save_for_backward({flat});
    ctx->saved_data["rows"] = weight.size(0);
    auto sizes = idx.sizes().vec();
    sizes.push_back(weight.size(1));
    return weight.index_select(0, flat).view(sizes);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    if (!ctx->needs_input_grad(1)) return {Tensor(), Tensor()};
    const Tensor flat = ctx->get_saved_variables()[0];
    const int64_t V = ctx->saved_data["rows"].toInt(), n = flat.numel();
    const Tensor g = grads[0].reshape({n, -1}).contiguous();            // (n, C)
    const int64_t C = g.size(1);
    const int64_t* id = flat.data_ptr<int64_t>();
    // Positions in token order within each id: a stable sort by id.
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return id[a] < id[b]; });
    std::vector<int64_t> rows;
    for (size_t i = 0; i < order.size(); ++i) {
      if (i == 0 || id[order[i]] != id[order[i - 1]]) rows.push_back(id[order[i]]);
    }
    const auto u = static_cast<int64_t>(rows.size());
    Tensor values = torch::zeros({u, C}, g.options());
    const float* src = g.data_ptr<float>();
    float* dst = values.data_ptr<float>();
    for (size_t i = 0, r = 0; i < order.size(); ++i) {
      if (i > 0 && id[order[i]] != id[order[i - 1]]) ++r;
      float* out = dst + static_cast<int64_t>(r) * C;
      const float* in = src + order[i] * C;
      for (int64_t c = 0; c < C; ++c) out[c] += in[c];
    }
    Tensor indices = torch::tensor(rows, flat.options()).unsqueeze(0);  // (1, u)
    Tensor grad = torch::sparse_coo_tensor(indices, values, {V, C})._coalesced_(true);
    return {Tensor(), grad};
  }
};

}  // namespace

Tensor tied_embedding(const Tensor& idx, const Tensor& weight) {
  if (detail::onednn_takes(weight) && weight.dim() == 2 && idx.scalar_type() == torch::kLong &&
      idx.device().is_cpu() && idx.numel() > 0) {
    return TiedEmbeddingFunction::apply(idx, weight);
  }
  return torch::embedding(weight, idx);
}

}  // namespace gpt2::cpu
