// GPT's incremental decoding (gpt.h): the blocks over a caller's KVStore,
// whose positions are not run again.
#include "gpt2/model/gpt.h"

#include <fmt/format.h>

#include <string>

#include "gpt2/error.h"
#include "gpt2/ops/ops.h"

namespace gpt2 {

torch::Tensor GPTImpl::forward_hidden(const torch::Tensor& idx, const torch::Tensor& positions,
                                      KVStore& store, const torch::Tensor& mask) {
  const torch::Device here = lm_head->weight.device();
  const auto describe = [](const torch::Tensor& t) {
    return t.defined() ? c10::str(c10::toString(t.scalar_type()), " ", t.sizes(), " on ",
                                  t.device())
                       : std::string("an undefined tensor");
  };
  if (!idx.defined() || idx.dim() != 2 || idx.scalar_type() != torch::kLong ||
      idx.device() != here) {
    throw InputError(fmt::format("forward_hidden takes idx (B, T) int64 on {}, got {}",
                                 here.str(), describe(idx)));
  }
  if (!positions.defined() || !positions.sizes().equals(idx.sizes()) ||
      positions.scalar_type() != torch::kLong || positions.device() != here) {
    throw InputError(fmt::format("forward_hidden takes positions {} int64 on {}, as idx, got {}",
                                 c10::str(idx.sizes()), here.str(), describe(positions)));
  }
  if (mask.defined() && (mask.dim() != 4 || mask.scalar_type() != torch::kBool ||
                         mask.device() != here || mask.size(2) != idx.size(1) ||
                         (mask.size(0) != 1 && mask.size(0) != idx.size(0)))) {
    throw InputError(fmt::format("forward_hidden takes a mask ({} or 1, 1, {}, S) bool on {}, "
                                 "got {}", idx.size(0), idx.size(1), here.str(), describe(mask)));
  }
  ops::ThreadScope threads;
  return run_blocks(embed_checked(idx, positions), &store, mask);  // (B, T, C)
}

}  // namespace gpt2
