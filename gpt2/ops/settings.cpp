#include "gpt2/ops/settings.h"

#include <atomic>

namespace gpt2 {

template <>
const std::vector<std::pair<MatmulBackend, std::string>>& names<MatmulBackend>() {
  static const std::vector<std::pair<MatmulBackend, std::string>> kNames = {
      {MatmulBackend::kTorch, "torch"}, {MatmulBackend::kOneDnn, "onednn"}};
  return kNames;
}

template <>
const std::vector<std::pair<HugePages, std::string>>& names<HugePages>() {
  static const std::vector<std::pair<HugePages, std::string>> kNames = {
      {HugePages::kAuto, "auto"}, {HugePages::kOn, "on"}, {HugePages::kOff, "off"}};
  return kNames;
}

template <>
const std::vector<std::pair<HeapPolicy, std::string>>& names<HeapPolicy>() {
  static const std::vector<std::pair<HeapPolicy, std::string>> kNames = {
      {HeapPolicy::kUntouched, "glibc's default"}, {HeapPolicy::kApps, "the app's"}};
  return kNames;
}

template <>
const std::vector<std::pair<WeightFormat, std::string>>& names<WeightFormat>() {
  static const std::vector<std::pair<WeightFormat, std::string>> kNames = {
      {WeightFormat::kFloat32, "fp32"}, {WeightFormat::kBFloat16, "bf16"},
      {WeightFormat::kInt8, "int8"}};
  return kNames;
}

template <>
const std::vector<std::pair<HeadLossPath, std::string>>& names<HeadLossPath>() {
  static const std::vector<std::pair<HeadLossPath, std::string>> kNames = {
      {HeadLossPath::kAuto, "auto"}, {HeadLossPath::kFused, "fused"}, {HeadLossPath::kTwoOps, "two-ops"}};
  return kNames;
}

namespace {
std::atomic<HeadLossPath> g_head_loss{HeadLossPath::kAuto};
}  // namespace

HeadLossPath head_loss_path() { return g_head_loss.load(); }
void set_head_loss_path(HeadLossPath path) { g_head_loss.store(path); }

namespace {
std::atomic<bool> g_cuda_kernels{true};
}  // namespace

bool cuda_kernels_built() {
#ifdef GPT2_WITH_CUDA_KERNELS
  return true;
#else
  return false;
#endif
}
bool cuda_kernels_enabled() { return cuda_kernels_built() && g_cuda_kernels.load(); }
void set_cuda_kernels(bool on) { g_cuda_kernels.store(on); }

std::string cuda_kernels_line() {
  if (!cuda_kernels_built()) return "none (this build has none: no CUDA LibTorch or no nvcc)";
  if (!g_cuda_kernels.load()) return "none (set_cuda_kernels(false))";
  return "layer_norm under autocast (float32 in, the autocast dtype out), the fused head's "
         "scoring (softmax and cross-entropy over its logits, in place)";
}

std::string to_string(MatmulBackend backend) { return enum_name(backend); }
std::string to_string(HeapPolicy policy) { return enum_name(policy); }
std::string to_string(WeightFormat format) { return enum_name(format); }

WeightFormat weight_format_from_string(const std::string& name) {
  return enum_from_name<WeightFormat>(name, "weight format");
}

}  // namespace gpt2
