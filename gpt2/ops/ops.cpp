#include "gpt2/ops/ops.h"

#include <ATen/autocast_mode.h>
#include <fmt/format.h>
#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>

#include <cmath>
#include <limits>

#include "gpt2/ops/cpu/cross_entropy.h"
#include "gpt2/ops/cpu/fused_attention.h"
#include "gpt2/ops/cpu/matmul.h"
#include "gpt2/ops/cpu/packed_linear.h"
#include "gpt2/ops/cpu/pointwise.h"
#include "gpt2/ops/cpu/tied_embedding.h"
#include "gpt2/ops/fused/head_loss.h"
#include "gpt2/ops/settings.h"
#ifdef GPT2_WITH_CUDA_KERNELS
#include "gpt2/ops/cuda/classifier.h"
#include "gpt2/ops/cuda/layer_norm.h"
#endif
#include "gpt2/error.h"
#include "gpt2/ops/memory.h"
#include "gpt2/ops/torch_compat.h"

namespace gpt2::ops {

using torch::Tensor;

Tensor empty(at::IntArrayRef sizes) { return empty_large(sizes); }

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  // Under autocast the product is torch's, in the autocast dtype.
  if (cpu::sgemm_linear_applies(x, weight, bias) && !autocast_enabled(torch::kCPU)) {
    return cpu::sgemm_linear(x, weight, bias);
  }
  return torch::linear(x, weight, bias);
}

struct PackedWeight::Copy {
  cpu::PackedWeight packed;
  int64_t version = -1;         // weight._version() when packed
  const void* from = nullptr;   // weight.data_ptr() when packed
};

PackedWeight& PackedWeight::operator=(const PackedWeight& other) {
  if (this != &other) {
    format_ = other.format_;
    copy_.reset();
  }
  return *this;
}

void PackedWeight::set_format(WeightFormat format, const Tensor& weight) {
  format_ = format;
  copy_.reset();
  if (format != WeightFormat::kFloat32) of(weight);
}

int64_t PackedWeight::bytes(const Tensor& weight) const {
  return copy_ ? copy_->packed.bytes() : static_cast<int64_t>(weight.nbytes());
}

const PackedWeight::Copy& PackedWeight::of(const Tensor& weight) {
  if (!copy_ || weight._version() != copy_->version || weight.data_ptr() != copy_->from) {
    auto fresh = std::make_shared<Copy>();
    fresh->packed = cpu::pack_weight(weight, format_);
    fresh->version = weight._version();
    fresh->from = weight.data_ptr();
    copy_ = std::move(fresh);
  }
  return *copy_;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, PackedWeight& packed) {
  if (packed.format() != WeightFormat::kFloat32 && !torch::GradMode::is_enabled() &&
      x.scalar_type() == torch::kFloat && x.device().is_cpu() && !autocast_enabled(torch::kCPU)) {
    return cpu::packed_linear(x, packed.of(weight).packed, bias);
  }
  return linear(x, weight, bias);
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
#ifdef GPT2_WITH_CUDA_KERNELS
  // Under autocast, the norm and the cast the next product would make, in
  // one kernel; elsewhere torch's kernel is as good.
  if (x.is_cuda() && x.scalar_type() == torch::kFloat && cuda_kernels_enabled() &&
      cuda::layer_norm_applies(x, weight, bias)) {
    const compat::AutocastState autocast = compat::autocast_state(torch::kCUDA);
    if (autocast.enabled) return cuda::layer_norm(x, weight, bias, eps, autocast.dtype);
  }
#endif
  return cpu::layer_norm(x, weight, bias, eps);  // torch's where its kernel does not apply
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  return cpu::gelu(x, approximate);  // torch's where its kernel does not apply
}

namespace {

// The (B, T, 3C) c_attn output whose heads q, k and v (B, nh, T, hs) are,
// as c_attn(x).split(C, 2) and .view(B, T, nh, hs).transpose(1, 2) make
// them; undefined when they are not laid out so.
Tensor joined_qkv(const Tensor& q, const Tensor& k, const Tensor& v) {
  if (q.dim() != 4 || !q.sizes().equals(k.sizes()) || !q.sizes().equals(v.sizes())) return {};
  const int64_t B = q.size(0), nh = q.size(1), T = q.size(2), hs = q.size(3), C = nh * hs;
  const std::vector<int64_t> strides{T * 3 * C, hs, 3 * C, 1};
  for (const Tensor* t : {&q, &k, &v}) {
    if (!t->strides().equals(strides) || t->scalar_type() != torch::kFloat ||
        !t->device().is_cpu() || !t->storage().is_alias_of(q.storage())) {
      return {};
    }
  }
  if (k.storage_offset() != q.storage_offset() + C || v.storage_offset() != q.storage_offset() + 2 * C) {
    return {};
  }
  const bool grad = torch::GradMode::is_enabled() &&
                    (q.requires_grad() || k.requires_grad() || v.requires_grad());
  if (!grad) return q.as_strided({B, T, 3 * C}, {T * 3 * C, 3 * C, 1}, q.storage_offset());
  // With autograd the gradient must reach the tensor c_attn made: the views'
  // base, when it holds just the (B, T, 3C) output, contiguous.
  if (!q.is_view() || !k.is_view() || !v.is_view()) return {};
  const Tensor base(q._base());
  if (!base.is_same(Tensor(k._base())) || !base.is_same(Tensor(v._base())) ||
      base.numel() != B * T * 3 * C || !base.is_contiguous() || base.data_ptr() != q.data_ptr()) {
    return {};
  }
  return base.view({B, T, 3 * C});
}

}  // namespace

Tensor causal_mask(int64_t T, int64_t past, const torch::Device& device) {
  if (T <= 1) return {};
  // Query i sits at position past + i and may not see keys after it.
  return torch::ones({T, past + T}, torch::TensorOptions(torch::kBool).device(device))
      .triu_(past + 1);                                                  // (T, past + T)
}

namespace {

// causal_mask(T, 0), made once for the blocks of a forward: the last one
// this thread asked for is kept (read only, never written).
Tensor causal_mask_of(int64_t T, const torch::Device& device) {
  thread_local Tensor last;
  if (!last.defined() || last.size(0) != T || last.device() != device) {
    last = causal_mask(T, 0, device);
  }
  return last;
}

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 double dropout_p, bool is_causal) {
  const int64_t T = q.size(-2), S = k.size(-2), hs = q.size(-1);
  if (is_causal && (mask.defined() || S != T)) {
    throw InputError(fmt::format("attention: is_causal takes no mask and as many keys as "
                                 "queries; got {} keys for {} queries{}", S, T,
                                 mask.defined() ? " and a mask" : ""));
  }
  if (!q.device().is_cpu() && compat::has_sdpa()) {  // the device's own kernels
    return compat::sdpa(q, k, v, mask.defined() ? mask.logical_not() : Tensor(), dropout_p,
                        is_causal && T > 1);
  }
  const Tensor m = is_causal ? causal_mask_of(T, q.device()) : mask;
  const bool plain_mask = !m.defined() || (m.dim() == 2 && m.size(0) == T && m.size(1) == T);
  if (plain_mask && S == T) {
    const Tensor qkv = joined_qkv(q, k, v);
    if (qkv.defined() && cpu::fused_attention_applies(qkv)) {
      const int64_t B = q.size(0), nh = q.size(1);
      const Tensor y = cpu::causal_attention(qkv, nh, m, dropout_p);  // (B, T, C)
      return y.view({B, T, nh, hs}).transpose(1, 2);                     // (B, nh, T, hs)
    }
  }
  // nanoGPT's explicit attention; in place after the product, as neither
  // op's backward needs what it overwrites.
  auto att = torch::matmul(q, k.transpose(-2, -1));          // (B, nh, T, S)
  att.mul_(1.0 / std::sqrt(double(hs)));
  if (m.defined()) att.masked_fill_(m, -std::numeric_limits<double>::infinity());
  att = torch::softmax(att, -1);
  if (dropout_p > 0) att = torch::dropout(att, dropout_p, /*train=*/true);
  return torch::matmul(att, v);                              // (B, nh, T, hs)
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  // Half logits (a model decoding in bfloat16 or float16) are scored in
  // float32, as autocast scores them: a loss rounded to 8 bits of mantissa
  // would move a perplexity by a percent.
  if (logits.scalar_type() == torch::kBFloat16 || logits.scalar_type() == torch::kHalf) {
    return cpu::cross_entropy(logits.to(torch::kFloat), targets);
  }
  return cpu::cross_entropy(logits, targets);  // torch's where its kernel does not apply
}

Tensor head_loss(const Tensor& x, const Tensor& weight, const Tensor& targets) {
  // On the CPU the two ops ran faster (docs/gpu-training.md, "The fused head").
  const HeadLossPath path = head_loss_path();
  if (path == HeadLossPath::kTwoOps || (path == HeadLossPath::kAuto && x.is_cpu())) {
    return cross_entropy(ops::linear(x, weight, Tensor()), targets);
  }
  HeadLossChunks chunks;
#ifdef GPT2_WITH_CUDA_KERNELS
  // On a GPU the logits are scored by the library's kernel, in place.
  if (x.is_cuda() && cuda_kernels_enabled()) {
    chunks.score = [](Tensor& logits, const Tensor& t, const Tensor& factor, int64_t V) {
      return cuda::classifier_applies(logits, t, V) ? cuda::classify_in_place(logits, t, factor, V)
                                                    : Tensor();
    };
  }
#endif
  return fused_head_loss(x, weight, targets, chunks);
}

Tensor tied_embedding(const Tensor& idx, const Tensor& weight) {
  return cpu::tied_embedding(idx, weight);  // torch::embedding where its kernel does not apply
}

bool autocast_enabled(torch::DeviceType type) {
  return (type == torch::kCPU || type == torch::kCUDA) && compat::autocast_state(type).enabled;
}

Autocast::Autocast(const torch::Device& device, torch::ScalarType dtype) : type_(device.type()) {
  if (dtype == torch::kFloat) return;
  const bool cuda = type_ == torch::kCUDA;
  if (!(type_ == torch::kCPU || cuda) ||
      !(dtype == torch::kBFloat16 || (cuda && dtype == torch::kHalf))) {
    throw Error(fmt::format("Autocast: {} on {} is not a mixed precision this library runs "
                            "(float32 anywhere, bfloat16 on cpu or cuda, float16 on cuda)",
                            c10::toString(dtype), device.str()));
  }
  const compat::AutocastState before = compat::autocast_state(type_);
  was_enabled_ = before.enabled;
  was_dtype_ = before.dtype;
  compat::set_autocast_state(type_, {true, dtype});
  at::autocast::increment_nesting();
  active_ = true;
}

Autocast::~Autocast() {
  if (!active_) return;
  // As torch.autocast's exit: the outermost scope drops the cast weights.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast_state(type_, {was_enabled_, was_dtype_});
}

}  // namespace gpt2::ops
