#include "gpt2/ops/cuda/classifier.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "gpt2/ops/cuda/dtype.h"
#include "gpt2/ops/cuda/kernels.h"

namespace gpt2::ops::cuda {

using torch::Tensor;

bool classifier_applies(const Tensor& logits, const Tensor& targets, int64_t V) {
  if (!logits.defined() || !logits.is_cuda() || logits.dim() != 2 || !logits.is_contiguous()) {
    return false;
  }
  return kernel_type(logits.scalar_type()) && V >= 1 && V <= logits.size(1) &&
         logits.size(0) <= std::numeric_limits<int>::max() &&
         targets.defined() && targets.dim() == 1 && targets.size(0) == logits.size(0) &&
         targets.scalar_type() == torch::kLong && targets.device() == logits.device() &&
         targets.is_contiguous();
}

Tensor classify_in_place(Tensor& logits, const Tensor& targets, const Tensor& factor, int64_t V) {
  TORCH_CHECK(classifier_applies(logits, targets, V), "the CUDA classifier does not take logits ",
              logits.sizes(), " ", logits.scalar_type(), " with V ", V);
  const int64_t N = logits.size(0);
  TORCH_CHECK(!factor.defined() || (factor.numel() == N && factor.scalar_type() == torch::kFloat &&
                                    factor.device() == logits.device() && factor.is_contiguous()),
              "the CUDA classifier's factor must be (", N, ") float32 on ", logits.device());
  const c10::cuda::CUDAGuard on_device(logits.device());
  Tensor losses = torch::empty({N}, logits.options().dtype(torch::kFloat));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(logits.device().index());
  C10_CUDA_CHECK(classifier(logits.data_ptr(), dtype_of(logits.scalar_type(), "classifier"),
                            losses.data_ptr<float>(), targets.data_ptr<int64_t>(),
                            factor.defined() ? factor.data_ptr<float>() : nullptr, N, V,
                            logits.size(1), stream));
  return losses;
}

}  // namespace gpt2::ops::cuda
