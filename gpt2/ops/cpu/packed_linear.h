#pragma once
/// Smaller weights for decoding: a Linear's matrix also kept as bfloat16, or
/// as int8 with one float32 scale per output row, and multiplied with
/// float32 activations by a small kernel written here. Inference only.
///
/// Decoding one token reads every weight once, so its speed is bytes per
/// weight over the read bandwidth: 4 for float32, 2 for bfloat16, 1 for
/// int8. No library this project links offers the weight-only product:
/// Debian's LibTorch has no fbgemm, its onednn and qnnpack quantized engines
/// quantize the activations as well (dynamic quantization changes every
/// product's input), and oneDNN 2.6's bfloat16 GEMM wants bfloat16
/// activations and AVX-512. The kernel is a row of dot products per output
/// (each weight row read once for all input rows), vectorized by the
/// compiler for AVX-512, AVX2 or SSE2 (chosen at run time), on gpt2's kernel
/// threads. Tests hold it to the float32 product within the rounding the
/// format implies.

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "gpt2/ops/settings.h"

namespace gpt2::cpu {

/// A weight (out, in) in a smaller format.
struct PackedWeight {
  WeightFormat format = WeightFormat::kFloat32;
  /// (out, in): bfloat16 or int8, contiguous.
  torch::Tensor data;
  /// (out) float32 for int8, undefined for bfloat16.
  torch::Tensor scale;
  /// Bytes read per product: data and scale.
  int64_t bytes() const;
};

/// Packs a float32 CPU weight (out, in). Throws gpt2::Error for kFloat32
/// or another dtype or device.
PackedWeight pack_weight(const torch::Tensor& weight, WeightFormat format);

/// x W^T + b for float32 CPU x (*, in) with W packed; no autograd. (*, out).
torch::Tensor packed_linear(const torch::Tensor& x, const PackedWeight& weight,
                            const torch::Tensor& bias);

}  // namespace gpt2::cpu
