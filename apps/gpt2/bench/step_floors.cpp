#include "apps/gpt2/bench/step_floors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

namespace gpt2::app {

std::string kernel_kind(const std::string& name) {
  std::string n(name.size(), ' ');
  std::transform(name.begin(), name.end(), n.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto has = [&](std::initializer_list<const char*> parts) {
    return std::any_of(parts.begin(), parts.end(),
                       [&](const char* p) { return n.find(p) != std::string::npos; });
  };
  if (n.rfind("memcpy", 0) == 0 || n.rfind("memset", 0) == 0) return "copy";
  // Before products: attention kernels are CUTLASS templates too.
  if (has({"flash", "fmha", "sdpa", "attention", "cudnn"})) return "attention";
  if (has({"gemm", "nvjet", "xmma", "cutlass", "cublas", "splitk"})) return "product";
  if (has({"adam", "multi_tensor", "foreach"})) return "optimizer";
  if (has({"layer_norm", "layernorm", "gammabeta"})) return "norm";
  if (has({"softmax", "nll", "cross_entropy", "classifier"})) return "loss";
  if (has({"embedding", "index", "scatter", "segment"})) return "embedding";
  if (has({"reduce"})) return "reduce";
  return "pointwise";
}

StepShape StepShape::of(const GPTImpl& model, int64_t batch, int64_t seq, int64_t act_bytes) {
  StepShape s;
  s.n_layer = model.config.n_layer();
  s.n_embd = model.config.n_embd();
  s.vocab = model.config.vocab_size();
  s.batch = batch;
  s.seq = seq;
  s.params = model.num_parameters();
  s.act_bytes = act_bytes;
  return s;
}

std::map<std::string, double> step_floors_us(const StepShape& s, double flops_per_s,
                                             double bytes_per_s) {
  const double tokens = static_cast<double>(s.batch * s.seq);
  const double L = static_cast<double>(s.n_layer), C = static_cast<double>(s.n_embd);
  const double padded = static_cast<double>((s.vocab + 63) / 64 * 64);
  const double e = static_cast<double>(s.act_bytes);
  std::map<std::string, double> floors;
  if (flops_per_s > 0) {
    // Per block: c_attn 3C², c_proj C², c_fc 4C², c_proj 4C²; then the head.
    floors["product"] = 6 * tokens * (12 * L * C * C + C * padded) / flops_per_s * 1e6;
    floors["attention"] = 6 * tokens * L * static_cast<double>(s.seq) * C / flops_per_s * 1e6;
  }
  if (bytes_per_s > 0) {
    // Forward: read the float32 stream, write the half output; backward:
    // read the half gradient and the stream, write the float32 gradient.
    floors["norm"] = (2 * L + 1) * tokens * C * (4 + e + e + 4 + 4) / bytes_per_s * 1e6;
    floors["loss"] = 2 * e * tokens * padded / bytes_per_s * 1e6;
    floors["optimizer"] = 32 * static_cast<double>(s.params) / bytes_per_s * 1e6;
  }
  return floors;
}

std::string kind_table(const KernelProfile& profile, const std::map<std::string, double>& floors) {
  std::map<std::string, std::pair<double, double>> by_kind;  // us, launches
  for (const KernelTime& k : profile.kernels) {
    auto& [us, calls] = by_kind[kernel_kind(k.name)];
    us += k.us_per_step;
    calls += k.calls_per_step;
  }
  std::vector<std::pair<std::string, std::pair<double, double>>> rows(by_kind.begin(), by_kind.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  const double total = std::max(profile.device_us_per_step, 1e-9);
  std::string out = "kinds     the device time by kind of kernel, against the least it could take:\n";
  for (const auto& [kind, t] : rows) {
    out += fmt::format("kind      {:<10} {:9.1f} us {:5.1f}% {:6.1f}x", kind, t.first,
                       100 * t.first / total, t.second);
    const auto floor = floors.find(kind);
    if (floor != floors.end() && floor->second > 0) {
      out += fmt::format("  floor {:9.1f} us, {:.2f}x it", floor->second, t.first / floor->second);
    }
    out += "\n";
  }
  return out;
}

}  // namespace gpt2::app
