#include "gpt2/runtime/device_line.h"

#include <ATen/Context.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "gpt2/ops/settings.h"
#include "gpt2/ops/torch_compat.h"

namespace gpt2 {

std::string device_line(const torch::Device& device, torch::ScalarType dtype,
                        const std::string& precision, const GPTConfig& config, int64_t batch,
                        int64_t seq) {
  const std::string kind = fmt::format("{} {}", c10::toString(dtype), precision);
  if (device.is_cpu()) {
    return fmt::format("cpu, LibTorch {}; {}; the ops seam's CPU kernels (runtime line above)",
                       TORCH_VERSION, kind);
  }
  const auto gpus = torch::cuda::device_count();
  std::string line = fmt::format("{} of {} GPU{}, LibTorch {}; {}", device.str(), gpus,
                                 gpus == 1 ? "" : "s", TORCH_VERSION, kind);
  line += fmt::format("; TF32 float32 products {}",
                      at::globalContext().allowTF32CuBLAS() ? "on" : "off");
  const int64_t nh = config.n_head(), hs = config.n_embd() / config.n_head();
  std::string attention;
  try {
    const auto options = torch::TensorOptions().device(device).dtype(dtype);
    const auto q = torch::empty({batch, nh, seq, hs}, options);
    attention = compat::sdpa_choice(q, q, q, /*is_causal=*/true);
  } catch (const c10::Error& e) {  // out of memory, or a device torch cannot reach
    attention = fmt::format("unknown ({})", e.what_without_backtrace());
  }
  line += fmt::format("; attention {} (torch's scaled_dot_product_attention at B {}, T {}, {} "
                      "heads of {}, {})", attention, batch, seq, nh, hs, c10::toString(dtype));
  line += compat::has_fused_adamw() ? "; AdamW torch's fused kernel" : "; AdamW torch's ops";
  line += "; the library's own CUDA kernels " + cuda_kernels_line();
  return line;
}

}  // namespace gpt2
