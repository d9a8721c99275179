#pragma once
/// Smaller weights for decoding, model-wide: every Linear of a GPT read as
/// bf16 or int8 by the products run without autograd (ops::PackedWeight),
/// and what a decoding step then reads.

#include <cstdint>

#include "gpt2/model/gpt.h"

namespace gpt2 {

/// Every Linear's weight format for products run without autograd
/// (LinearImpl::set_weight_format): each block's c_attn, c_proj, c_fc and
/// mlp.c_proj, and lm_head, whose matrix is the tied wte's (the embedding
/// still reads the float32 one). kFloat32 drops the copies.
void set_weight_format(GPTImpl& model, WeightFormat format);

/// Bytes one decoding step reads for the weights: each Linear's
/// weight_bytes(), and every other parameter once.
int64_t decode_weight_bytes(const GPTImpl& model);

}  // namespace gpt2
