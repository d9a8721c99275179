#pragma once
/// Hugging Face GPT-2 (GPT2LMHeadModel) weights in safetensors files, in
/// and out. Hugging Face names the tensors as nanoGPT does, with or without
/// the `transformer.` prefix, but stores the four Conv1D weights
/// (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj) as (in, out): they are
/// transposed to Linear's (out, in). The attention-mask buffers
/// (`attn.bias`, `attn.masked_bias`) are ignored; no `lm_head.weight` means
/// tied, and one that differs from wte is an error (this model is tied).
///
/// A model is a folder holding `model.safetensors` and `config.json`, or a
/// `.safetensors` file with a `config.json` beside it (optional: the shapes
/// give everything but n_head).

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "gpt2/io/model_source.h"
#include "gpt2/io/safetensors.h"
#include "gpt2/io/state_dict.h"
#include "gpt2/model/config.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// Where a Hugging Face model's files are.
struct HfPaths {
  /// The safetensors file.
  std::string weights;
  /// The config.json that goes with it (it may not exist).
  std::string config;
};

/// `path` as a folder (`path/model.safetensors`, `path/config.json`) when it
/// is an existing folder or has no `.safetensors` extension, else as the file
/// itself with `config.json` beside it.
HfPaths hf_paths(const std::string& path);

/// How to read a Hugging Face GPT-2.
struct HfReadOptions {
  /// n_head, when no config.json comes with the file: the shapes cannot tell it.
  TORCH_ARG(std::optional<int64_t>, n_head) = std::nullopt;
  /// dtype of the model built; F16 and BF16 files are converted to it.
  TORCH_ARG(torch::ScalarType, dtype) = torch::kFloat;
  /// Whether the weights stay in the file's pages (Mmap says what that
  /// trades). The Conv1D weights are transposed, so copied, either way.
  TORCH_ARG(Mmap, mmap) = Mmap::kOff;
};

/// The tensors of the Hugging Face GPT-2 at `path` (hf_paths) as stored, by
/// nanoGPT name (Conv1D weights transposed to nanoGPT's layout),
/// lm_head.weight only where the file holds one. CheckpointError listing
/// the problems of names and shapes; FormatError for malformed bytes.
StateDict read_safetensors_tensors(const std::string& path);

/// Builds the model a Hugging Face GPT-2 describes: n_layer from the count
/// of `h.N`, n_embd and vocab_size from wte, block_size from wpe, biases
/// when present, n_head and the GELU from config.json (or `options`).
/// Every problem (names, shapes, config.json against the shapes) is listed
/// in one CheckpointError naming the file; malformed bytes are a FormatError.
GPT load_safetensors(const std::string& path, const HfReadOptions& options = {});

/// Loads a Hugging Face GPT-2 into `model` through load_state_dict (tensors
/// converted to the model's dtype). On any problem `model` is bit-identical
/// to before.
void load_safetensors(const std::string& path, GPTImpl& model);

/// The model described by already parsed contents and config.json text
/// (empty when there is none); `source` names them in errors.
GPT model_from_safetensors(const SafetensorsContents& contents, const std::string& config_json,
                           const HfReadOptions& options, const std::string& source);

/// Writes `model` as Hugging Face does: no `transformer.` prefix, Conv1D
/// weights (in, out), the tied matrix once (as wte.weight), `__metadata__
/// {"format": "pt"}`, plus config.json with GPT2Config's field names (see
/// hf_paths for where). Each file is written atomically.
void save_safetensors(const std::string& path, const GPTImpl& model);

/// `config` as Hugging Face's GPT2Config JSON (n_layer, n_head, n_embd,
/// n_positions, vocab_size, activation_function, ...).
std::string hf_config_json(const GPTConfig& config);

}  // namespace gpt2
