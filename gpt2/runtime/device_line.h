#pragma once
/// What runs on a GPU, in one line for a run's start: the device, the
/// precision, TF32, the attention kernel torch picks for the run's shapes,
/// the optimizer's kernel, and whether kernels of the library's own are
/// used (whether decoding replays CUDA graphs, the decoder says: it is
/// decided per run). runtime_line() says the same of the CPU.

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "gpt2/model/config.h"

namespace gpt2 {

/// `cuda:0 of 1 GPU, LibTorch 2.11.0; bfloat16 autocast; TF32 float32
/// products on; attention flash (torch's scaled_dot_product_attention at B
/// 16, T 1024, 12 heads of 64, bfloat16); AdamW torch's fused kernel; the
/// library's own CUDA kernels layer_norm under autocast (...)`
/// (cuda_kernels_line, gpt2/ops/settings.h). `precision` says how
/// `dtype` is used ("autocast" for training, "weights" for decoding). The
/// attention choice is asked of torch with tensors of those shapes on
/// `device` (3 x B·T·C values, freed before it returns). On the CPU, where
/// the ops seam runs the library's own kernels, it says so.
std::string device_line(const torch::Device& device, torch::ScalarType dtype,
                        const std::string& precision, const GPTConfig& config, int64_t batch,
                        int64_t seq);

}  // namespace gpt2
