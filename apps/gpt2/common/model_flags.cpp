#include "apps/gpt2/common/model_flags.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <ostream>
#include <set>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/fields/table.h"
#include "gpt2/generate/generate.h"
#include "gpt2/generate/weight_format.h"
#include "gpt2/io/model_source.h"
#include "gpt2/runtime/device_line.h"

namespace gpt2::app {
namespace {

// The command's seed when none is given, so that a run is repeatable.
constexpr uint64_t kDefaultSeed = 1337;

}  // namespace

std::vector<CLI::Option*> ModelFlags::add_to(CLI::App& app, const std::vector<std::string>& skip) {
  std::vector<CLI::Option*> added;
  added.push_back(app.add_option("--preset", preset, "Model sizes to start from")
                      ->check(CLI::IsMember(preset_choices))
                      ->each([this](const std::string&) { preset_given = true; })
                      ->capture_default_str());
  std::vector<GPTConfig> presets;
  for (const auto& name : preset_choices) {
    presets.push_back(preset_config(name));
    presets.back().init().seed(kDefaultSeed);
  }
  for (CLI::Option* option : add_field_flags(app, flag_specs(presets), fields, skip, default_notes)) {
    added.push_back(option);
  }
  return added;
}

ModelFlags& ModelFlags::set(const std::string& key, const std::string& text) {
  const auto field = find_field(GPTConfig(), key);
  fields.set(key, text, field && field->flag ? fmt::format("--{}", field->flag) : key);
  return *this;
}

GPTConfig ModelFlags::config() const { return config_from(preset_config(preset)); }

GPTConfig ModelFlags::config_from(GPTConfig base) const {
  GPTConfig c = std::move(base);
  c.init().seed(kDefaultSeed);
  fields.apply_to(c);
  c.validate();
  check_fits_in_memory(c);  // a size typo fails here, not when memory runs out
  return c;
}

GPT model_from(const std::string& path, const ModelFlags& flags, std::ostream& notes,
               Mmap mmap) {
  if (path.empty()) return GPT(flags.config());
  LoadedModel loaded = load_model_file(path, ModelSourceOptions().mmap(mmap));
  for (const auto& note : loaded.notes) fmt::print(notes, "note      {}\n", note);
  return loaded.model;
}

CLI::Option* add_mmap_flag(CLI::App& cmd, std::string& mmap) {
  return cmd
      .add_option("--mmap", mmap,
                  "Leave the weights in the model file's pages (copy-on-write) instead of "
                  "copying them: on; off; auto: where the kernel maps the file in 2 MiB pages. "
                  "Mapped, the file must not be truncated or rewritten in place meanwhile "
                  "(docs/speed.md)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
}

CLI::Option* add_weights_flag(CLI::App& cmd, std::string& weights) {
  return cmd.add_option("--weights", weights,
                        "Read the Linear weights as fp32, bf16 or int8 (one scale per output row) "
                        "when decoding: fewer bytes per token, slightly different numbers "
                        "(docs/speed.md)")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}))
      ->capture_default_str();
}

void apply_weights(GPTImpl& model, const std::string& weights, std::ostream& out) {
  const WeightFormat format = weight_format_from_string(weights);
  const int64_t fp32 = decode_weight_bytes(model);
  set_weight_format(model, format);
  if (format == WeightFormat::kFloat32) return;
  int64_t copies = 0;  // the packed copies, the tied matrix's once
  std::set<const void*> seen;
  for (const auto& module : model.modules(/*include_self=*/false)) {
    if (const auto* linear = module->as<LinearImpl>()) {
      if (seen.insert(linear->weight.data_ptr()).second) copies += linear->weight_bytes();
    }
  }
  const int64_t held = static_cast<int64_t>(model.num_parameters()) * 4 + copies;
  fmt::print(out, "weights   {}: {:.0f} MB read per token (fp32: {:.0f} MB); {:.0f} MB held (the "
                  "fp32 weights stay, for the embedding and for training)\n",
             weights, decode_weight_bytes(model) / 1e6, fp32 / 1e6, held / 1e6);
}

CLI::Option* add_device_flag(CLI::App& cmd, std::string& device) {
  return cmd.add_option("--device", device,
                        "Where the model runs: cpu, cuda (GPU 0) or cuda:N (docs/gpu.md)")
      ->capture_default_str();
}

torch::Device device_from_flag(const std::string& text) {
  const bool cuda = text == "cuda" || text.rfind("cuda:", 0) == 0;
  const std::string index = text.size() > 5 ? text.substr(5) : "";
  const bool digits = !index.empty() && index.size() <= 3 &&
                      index.find_first_not_of("0123456789") == std::string::npos;
  if (text != "cpu" && !(cuda && (text == "cuda" || digits))) {
    throw ConfigError(fmt::format("--device: '{}' is not cpu, cuda or cuda:N", text));
  }
  if (!cuda) return torch::Device(torch::kCPU);
  const int n = text == "cuda" ? 0 : std::stoi(index);
  if (!torch::cuda::is_available()) {
    throw ConfigError(fmt::format("--device {}: this LibTorch ({}) sees no CUDA GPU (a CPU-only "
                                  "build, or no GPU and driver here)", text, TORCH_VERSION));
  }
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (n >= count) {
    throw ConfigError(fmt::format("--device {}: this machine has {} CUDA GPU{} (cuda:0{})", text,
                                  count, count == 1 ? "" : "s",
                                  count > 1 ? fmt::format(" to cuda:{}", count - 1) : ""));
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(n));
}

void refuse_packed_weights_off_cpu(const std::string& device, const std::string& weights) {
  if (device != "cpu" && weights != "fp32") {
    throw ConfigError(fmt::format("--weights {} packs the weights for the CPU's decoding; on --device "
                                  "{} the products run on the device's own kernels: leave --weights "
                                  "at fp32", weights, device));
  }
}

torch::Device device_for(const std::string& device, const std::string& weights) {
  refuse_packed_weights_off_cpu(device, weights);
  return device_from_flag(device);
}

CLI::Option* add_dtype_flag(CLI::App& cmd, std::string& dtype) {
  return cmd.add_option("--dtype", dtype,
                        "Precision of the products, as nanoGPT's dtype: float32, or bfloat16 "
                        "(autocast; weights, gradients and optimizer stay float32)")
      ->check(CLI::IsMember({"float32", "bfloat16"}))
      ->capture_default_str();
}

torch::ScalarType dtype_from_flag(const std::string& text) {
  if (text == "float32") return torch::kFloat;
  if (text == "bfloat16") return torch::kBFloat16;
  throw ConfigError(fmt::format("--dtype: '{}' is not float32 or bfloat16", text));
}

CLI::Option* add_decode_dtype_flag(CLI::App& cmd, std::string& dtype) {
  return cmd.add_option("--dtype", dtype,
                        "Decode with the weights cast to float32, bfloat16 or float16 (a GPU's "
                        "dtypes; on the CPU --weights bf16|int8 are the decoding formats)")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16"}))
      ->capture_default_str();
}

CLI::Option* add_draw_flag(CLI::App& cmd, std::string& draw) {
  std::vector<std::string> spellings;
  for (const auto& [value, name] : names<Draw>()) spellings.push_back(name);
  return cmd.add_option("--draw", draw,
                        "Where sampled tokens are drawn: host (the logits copied to the CPU: the "
                        "CPU's stream, the same text from a seed on any device), device (where the "
                        "logits are, a step's rows in one batch: only the ids leave a GPU), auto "
                        "(device on a GPU, host on the CPU)")
      ->check(CLI::IsMember(spellings))
      ->capture_default_str();
}

CLI::Option* add_no_cuda_graphs_flag(CLI::App& cmd, bool& no_graphs) {
  return cmd.add_flag("--no-cuda-graphs", no_graphs,
                      "On a GPU, run each decoding step op by op instead of replaying a CUDA "
                      "graph");
}

torch::ScalarType decode_dtype_for(const std::string& device, const std::string& dtype) {
  if (dtype == "float32") return torch::kFloat;
  if (dtype != "bfloat16" && dtype != "float16") {
    throw ConfigError(fmt::format("--dtype: '{}' is not float32, bfloat16 or float16", dtype));
  }
  if (device == "cpu") {
    throw ConfigError(fmt::format("--dtype {} casts the weights for a GPU's decoding; on --device cpu "
                                  "use --weights bf16 or int8 (packed for the CPU's kernels) and "
                                  "leave --dtype at float32", dtype));
  }
  return dtype == "bfloat16" ? torch::kBFloat16 : torch::kHalf;
}

void to_decode_device(GPTImpl& model, const torch::Device& device, torch::ScalarType dtype,
                      std::ostream& out) {
  model.to(device, dtype);
  if (dtype != torch::kFloat) {
    fmt::print(out, "dtype     {} weights on {}: {:.0f} MB (cast once at load)\n",
               c10::toString(dtype), device.str(),
               static_cast<double>(model.num_parameters()) * c10::elementSize(dtype) / 1e6);
  }
  if (device.is_cuda()) {  // the prompt's pass, one sequence of the full block
    fmt::print(out, "device    {}\n", device_line(device, dtype, "weights", model.config, 1,
                                                   model.config.block_size()));
  }
}

}  // namespace gpt2::app
