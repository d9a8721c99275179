#pragma once
/// One entry point for every weight file this library reads and writes:
/// gpt2 checkpoints (`.pt`), Hugging Face safetensors (a `.safetensors`
/// file or a folder with `model.safetensors` and `config.json`) and llm.c
/// model files (`.bin`). Commands that take a model (`generate`, `export`,
/// `convert`) load it with load_model.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpt2/fields/fields.h"
#include "gpt2/io/load_options.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// The two versions of llm.c's model file (gpt2/io/llmc.h).
enum class LlmcDtype {
  kFloat32,   ///< version 3
  kBFloat16,  ///< version 5
};

/// The weight file formats.
enum class ModelFormat {
  kCheckpoint,   ///< gpt2's TorchScript checkpoint (checkpoint.h)
  kSafetensors,  ///< Hugging Face GPT-2 (hf_gpt2.h)
  kLlmc,         ///< llm.c's model file (llmc.h)
};

/// The spellings (names<Enum>() in gpt2/fields/fields.h): "checkpoint",
/// "safetensors", "llmc", the command's --from/--to; "float32",
/// "bfloat16" for llm.c's two versions.
template <>
const std::vector<std::pair<ModelFormat, std::string>>& names<ModelFormat>();
template <>
const std::vector<std::pair<LlmcDtype, std::string>>& names<LlmcDtype>();
std::string to_string(ModelFormat format);
std::string to_string(LlmcDtype dtype);
/// Inverse of to_string(ModelFormat); throws ConfigError naming the spellings.
ModelFormat model_format_from_string(const std::string& name);

/// The format of `path` by its name: a folder or `.safetensors` is
/// safetensors (so is a path ending in `/`), `.bin` llm.c, `.pt` a
/// checkpoint. Any other name is told by the file's first bytes (llm.c's
/// magic, a safetensors header, else a checkpoint); FileError if it is not
/// a regular file that can be read (missing, a FIFO, a device...).
ModelFormat detect_model_format(const std::string& path);

/// How to read a model file.
struct ModelSourceOptions {
  /// The format; detect_model_format(path) when unset.
  TORCH_ARG(std::optional<ModelFormat>, format) = std::nullopt;
  /// n_head for a safetensors file without config.json.
  TORCH_ARG(std::optional<int64_t>, n_head) = std::nullopt;
  /// Whether the weights stay in the file's pages (Mmap says what that
  /// trades). `gpt2 generate` and `gpt2 eval` load with Mmap::kAuto.
  TORCH_ARG(Mmap, mmap) = Mmap::kOff;
  /// Whether weights that are NaN or infinite are loaded (and named in the
  /// notes) instead of refused: for tools that report them.
  TORCH_ARG(bool, allow_nonfinite) = false;
};

/// A model read from a file of any format.
struct LoadedModel {
  /// Built from the file's config, weights loaded through load_state_dict.
  GPT model{nullptr};
  /// The format it was read as.
  ModelFormat format = ModelFormat::kCheckpoint;
  /// Things a user may want to know (a checkpoint without checksums).
  std::vector<std::string> notes;
};

/// Reads the model in `path`, of any format. Errors as each reader's:
/// FileError / FormatError for unreadable or malformed files,
/// CheckpointError listing every problem of one that does not describe a
/// model; and, in every format, FormatError `'PATH': NAME has 1 NaN and 0
/// infinite of 768 values...` for weights that are not finite, unless
/// options.allow_nonfinite().
LoadedModel load_model_file(const std::string& path, const ModelSourceOptions& options = {});

/// load_model_file(path, options).model.
GPT load_model(const std::string& path, const ModelSourceOptions& options = {});

/// How to write a model file.
struct ModelSaveOptions {
  /// The format; detect_model_format(path) when unset.
  TORCH_ARG(std::optional<ModelFormat>, format) = std::nullopt;
  /// For llm.c files: version 3 (float32) or 5 (bfloat16).
  TORCH_ARG(LlmcDtype, llmc_dtype) = LlmcDtype::kFloat32;
};

/// Writes `model` to `path` in the chosen format (weights only for a
/// checkpoint), atomically. Returns the format written. Without a format,
/// a path that does not exist must say it by its name (.pt, .safetensors or
/// a trailing /, .bin): ConfigError otherwise, before anything is written.
ModelFormat save_model(const std::string& path, const GPTImpl& model,
                       const ModelSaveOptions& options = {});

}  // namespace gpt2
