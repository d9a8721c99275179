#pragma once
/// GPTConfig: the hyper-parameters of a GPT-2 model and of its initialization,
/// options-style (TORCH_ARG), with the four OpenAI presets by name.

#include <torch/arg.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpt2/fields/fields.h"

namespace gpt2 {

/// How the residual projections (the c_proj weights) start: scaled by
/// 1/sqrt(N) for the N residual additions counted, or at zero.
enum class ResidualScale {
  kTwoPerBlock,  ///< N = 2 * n_layer: attention and MLP each add once (GPT-2, nanoGPT).
  kOnePerBlock,  ///< N = n_layer: a common misreading; writes are sqrt(2) too large.
  kNone,         ///< no scaling: residual variance grows linearly with depth.
  kZero,         ///< exactly 0 (modded-nanogpt, nanochat): every block starts as the identity.
};

/// The initialization scheme (GPT-2 paper, section 2.3).
struct InitOptions {
  /// std of every Linear weight and of wte (= lm_head).
  TORCH_ARG(double, std) = 0.02;
  /// std of wpe: 0.02 in nanoGPT, 0.01 in OpenAI's TensorFlow code.
  TORCH_ARG(double, wpe_std) = 0.02;
  /// Which residual count scales the c_proj weights.
  TORCH_ARG(ResidualScale, residual) = ResidualScale::kTwoPerBlock;
  /// Seed for a private generator; unset draws from torch's default generator,
  /// so torch::manual_seed governs it as in PyTorch.
  TORCH_ARG(std::optional<uint64_t>, seed) = std::nullopt;
};

/// Which GELU the MLP uses.
enum class Gelu {
  kTanh,  ///< tanh approximation, as GPT-2 and Hugging Face.
  kExact, ///< erf form, as nanoGPT's nn.GELU().
};

/// Hyper-parameters of a GPT model. Defaults are the `gpt2` (124M) preset.
struct GPTConfig {
  /// Longest sequence the model accepts; rows of wpe.
  TORCH_ARG(int64_t, block_size) = 1024;
  /// Number of token ids; rows of wte.
  TORCH_ARG(int64_t, vocab_size) = 50257;
  /// Number of transformer blocks.
  TORCH_ARG(int64_t, n_layer) = 12;
  /// Attention heads per block; must divide n_embd.
  TORCH_ARG(int64_t, n_head) = 12;
  /// Width of the residual stream.
  TORCH_ARG(int64_t, n_embd) = 768;
  /// Biases in Linear and LayerNorm (GPT-2: true).
  TORCH_ARG(bool, bias) = true;
  /// Dropout probability in [0, 1); 0 for inference and for GPT-2 fine-tuning.
  TORCH_ARG(double, dropout) = 0.0;
  /// GELU variant of the MLP.
  TORCH_ARG(Gelu, gelu) = Gelu::kTanh;
  /// Initialization scheme.
  TORCH_ARG(InitOptions, init) = {};

 public:
  /// The preset called `name`: gpt2, gpt2-medium, gpt2-large or gpt2-xl.
  /// Throws ConfigError naming the known presets otherwise.
  static GPTConfig preset(const std::string& name);
  /// Names accepted by preset(), smallest first.
  static std::vector<std::string> preset_names();

  /// Throws ConfigError if any field cannot describe a model, or n_layer is
  /// above kMaxLayers.
  void validate() const;
  /// The deepest model a config may describe. GPT-2 XL has 48 layers; past
  /// about a thousand, LibTorch's TorchScript writer (checkpoints, export)
  /// takes time quadratic in the depth: 1,000 one-wide layers wrote in 2 s,
  /// 4,000 in 43 s.
  static constexpr int64_t kMaxLayers = 1024;

  /// Parameters of the model this config builds, the tied matrix once.
  /// Computed from the sizes alone, without allocating; ConfigError if the
  /// count does not fit in int64.
  int64_t num_parameters(bool non_embedding = false) const;

  /// std of the residual projections (c_proj weights) under the init
  /// scheme; 0 under kZero.
  double residual_std() const;
  /// The N in std / sqrt(N): 1 when the scheme does not scale, 0 under
  /// kZero (no N makes a zero; residual_std() is the value to use).
  int64_t residual_count() const;
};

/// The spellings of the enums (see names<Enum>() in gpt2/fields/fields.h):
/// `tanh`, `exact`; `2n`, `n`, `none`, `zero`.
template <>
const std::vector<std::pair<Gelu, std::string>>& names<Gelu>();
template <>
const std::vector<std::pair<ResidualScale, std::string>>& names<ResidualScale>();

/// "tanh" / "exact".
std::string to_string(Gelu gelu);
/// "2n" / "n" / "none" / "zero".
std::string to_string(ResidualScale scale);
/// Inverse of to_string(Gelu); throws ConfigError naming the known spellings.
Gelu gelu_from_string(const std::string& name);
/// Inverse of to_string(ResidualScale); throws ConfigError naming the known spellings.
ResidualScale residual_scale_from_string(const std::string& name);
/// torch::gelu's `approximate` argument for `gelu`: "tanh" or "none" (erf).
const char* torch_gelu_approximate(Gelu gelu);

/// A one-line, Python-repr-like description of every field.
std::string to_string(const GPTConfig& config);

/// The table's name in messages and to_string.
inline const char* table_name(const GPTConfig&) { return "GPTConfig"; }

/// The field table (see gpt2/fields/fields.h): calls `visit(Field, value)`
/// once per field of `config`, in a fixed order, with `value` a reference
/// to the field (const when `config` is). Its types are int64_t, bool,
/// double, Gelu, ResidualScale and std::optional<uint64_t>. Everything that
/// lists the fields (to_string, checkpoints, the command's flags, resume
/// checks) reads this, so a new field is one line here.
template <class Config, class Visitor>
TableVisit<Config, GPTConfig> for_each_field(Config& config, Visitor&& visit) {
  auto& init = config.init();
  visit(Field{"block_size", "block-size", "Longest sequence (rows of wpe)", true},
        config.block_size());
  visit(Field{"vocab_size", "vocab-size", "Vocabulary size (rows of wte)", true},
        config.vocab_size());
  visit(Field{"n_layer", "n-layer", "Number of blocks", true}, config.n_layer());
  visit(Field{"n_head", "n-head", "Attention heads (must divide n_embd)", true},
        config.n_head());
  visit(Field{"n_embd", "n-embd", "Residual width", true}, config.n_embd());
  visit(Field{"bias", "bias", "Biases in Linear and LayerNorm", true}, config.bias());
  visit(Field{"dropout", "dropout", "Dropout probability in [0, 1)", false}, config.dropout());
  visit(Field{"gelu", "gelu", "GELU of the MLP: tanh (GPT-2) or exact (erf)", true}, config.gelu());
  visit(Field{"init_std", "init-std", "std of Linear weights and wte", false}, init.std());
  visit(Field{"init_wpe_std", "wpe-std",
              "std of wpe: 0.02 (nanoGPT) or 0.01 (OpenAI's TF code)", false},
        init.wpe_std());
  visit(Field{"init_residual", "init-scheme",
              "Residual projections: 2n = std/sqrt(2*n_layer) (GPT-2), n = std/sqrt(n_layer), "
              "none = std, zero = 0",
              false},
        init.residual());
  visit(Field{"init_seed", "seed", "Seed of the init's generator", false, "init_has_seed"},
        init.seed());
}

}  // namespace gpt2
