#pragma once
// Flags that choose a model: a preset, and an override flag for every field
// of GPTConfig's field table (--n-layer, --gelu, --no-bias, --seed, ...),
// made by the one builder of field flags (field_flags.h). Shared by every
// subcommand that builds a model.

#include <CLI/App.hpp>

#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "apps/gpt2/common/field_flags.h"
#include "gpt2/io/model_source.h"
#include "gpt2/model/config.h"
#include "gpt2/model/gpt.h"

namespace gpt2::app {

/// Values of the model flags, filled by CLI11.
struct ModelFlags {
  /// The preset the overrides apply to.
  std::string preset = "gpt2";
  /// The names --preset accepts.
  std::vector<std::string> preset_choices = GPTConfig::preset_names();
  /// The config of a preset name (a command with other presets replaces it).
  std::function<GPTConfig(const std::string&)> preset_config = &GPTConfig::preset;
  /// What --help says a field's default is where the presets do not say it
  /// (`{"vocab_size", "the data's"}`).
  std::map<std::string, std::string> default_notes;
  /// Whether --preset was given.
  bool preset_given = false;
  /// Field overrides.
  FieldFlags fields;

  /// Adds --preset and one flag per config field to `app`, but for the
  /// fields keyed in `skip` (a command whose own flag has the same name);
  /// returns them, so a command can make another flag exclude them. `app`
  /// must not outlive this object.
  std::vector<CLI::Option*> add_to(CLI::App& app, const std::vector<std::string>& skip = {});
  /// Records an override as its flag would (`set("n_layer", "3")`).
  ModelFlags& set(const std::string& key, const std::string& text);
  /// The preset, init seed 1337, then every override; throws ConfigError
  /// naming the flag if a value or the result is invalid.
  GPTConfig config() const;
  /// As config(), starting from `base` instead of the preset's config.
  GPTConfig config_from(GPTConfig base) const;
  /// Whether an override of the field `key` was given.
  bool has(const std::string& key) const { return fields.has(key); }
};

/// The model in `path` (any format load_model reads), printing each of the
/// loader's notes (float16 widened, NaN or infinite weights, no checksums)
/// as a `note` line on `notes`; or, when `path` is empty, a fresh model of
/// flags.config().
GPT model_from(const std::string& path, const ModelFlags& flags, std::ostream& notes,
               Mmap mmap = Mmap::kOff);

/// `--mmap auto|on|off` into `mmap` (its value is the default): whether the
/// weights stay in the model file's pages (gpt2::Mmap).
CLI::Option* add_mmap_flag(CLI::App& cmd, std::string& mmap);

/// `--weights fp32|bf16|int8` into `weights` (default fp32): the format the
/// Linear weights are read in without autograd (packed_linear.h).
CLI::Option* add_weights_flag(CLI::App& cmd, std::string& weights);
/// Sets `weights` on `model` (set_weight_format, gpt2/generate/weight_format.h) and, unless fp32,
/// prints `weights   int8: 131 MB read per token (fp32: 498 MB); 629 MB held`.
void apply_weights(GPTImpl& model, const std::string& weights, std::ostream& out);

/// `--device cpu|cuda|cuda:N` into `device` (its value is the default):
/// where the model runs.
CLI::Option* add_device_flag(CLI::App& cmd, std::string& device);
/// The device `text` names, checked against this machine: ConfigError for
/// a name that is not cpu, cuda or cuda:N, and for a GPU this LibTorch
/// cannot reach (built without CUDA, no GPU, or fewer than N + 1).
torch::Device device_from_flag(const std::string& text);

/// ConfigError for `weights` other than fp32 with a `device` flag other
/// than cpu: the packed formats are the CPU decoder's.
void refuse_packed_weights_off_cpu(const std::string& device, const std::string& weights);

/// refuse_packed_weights_off_cpu, then device_from_flag(device).
torch::Device device_for(const std::string& device, const std::string& weights);

/// `--dtype float32|bfloat16` into `dtype` (default float32): nanoGPT's
/// dtype, bfloat16 autocasting the products (gpt2::ops::Autocast).
CLI::Option* add_dtype_flag(CLI::App& cmd, std::string& dtype);
/// torch::kFloat or torch::kBFloat16 for a value add_dtype_flag accepts.
torch::ScalarType dtype_from_flag(const std::string& text);

/// `--dtype float32|bfloat16|float16` into `dtype` (default float32) for
/// decoding (generate, eval, serve): the weights are cast to it once, on a
/// GPU, and every product, the attention and the KV cache run in it.
CLI::Option* add_decode_dtype_flag(CLI::App& cmd, std::string& dtype);
/// `--draw auto|host|device` into `draw` (default auto; gpt2::Draw's
/// names): where sampled tokens are drawn (generate, serve).
CLI::Option* add_draw_flag(CLI::App& cmd, std::string& draw);

/// `--no-cuda-graphs` into `no_graphs`: on a GPU, decoding steps run op by
/// op instead of replaying a CUDA graph (generate, serve).
CLI::Option* add_no_cuda_graphs_flag(CLI::App& cmd, bool& no_graphs);
/// The dtype of a `--dtype` that add_decode_dtype_flag accepts, for
/// `--device device`. ConfigError naming both for a half dtype on the CPU,
/// whose decoding formats are --weights bf16 and int8.
torch::ScalarType decode_dtype_for(const std::string& device, const std::string& dtype);
/// Moves `model` to `device` in `dtype` and, for a half dtype, says so
/// with the bytes the weights now take on `out`.
void to_decode_device(GPTImpl& model, const torch::Device& device, torch::ScalarType dtype,
                      std::ostream& out);

}  // namespace gpt2::app
