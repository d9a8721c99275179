#pragma once
// nanoGPT's explicit causal attention on oneDNN's sgemm (matmul.h says why),
// reading the heads where c_attn wrote them: no split, transpose or copy.

#include <torch/types.h>

#include <cstdint>

namespace gpt2::cpu {

/// Whether causal_attention() takes `qkv`: the onednn backend and a float32
/// CPU (B, T, 3C) tensor.
bool fused_attention_applies(const torch::Tensor& qkv);

/// nanoGPT's explicit causal attention, from c_attn's output, with autograd:
/// softmax(q k^T / sqrt(hs), masked where `mask` (T, T) is true), dropout
/// `dropout` (drawn as torch::dropout draws it), times v, heads merged.
/// qkv (B, T, 3C) -> y (B, T, C). Each head's products run on oneDNN reading
/// q, k, v in place, one (batch, head) pair per thread.
torch::Tensor causal_attention(const torch::Tensor& qkv, int64_t n_head, const torch::Tensor& mask,
                               double dropout);

}  // namespace gpt2::cpu
