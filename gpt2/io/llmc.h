#pragma once
/// llm.c's model files (`gpt2_124M.bin`, `gpt2_124M_bf16.bin`): a header
/// of 256 int32 (magic 20240326; version 3 = float32, 5 = bfloat16;
/// max_seq_len, vocab_size, n_layer, n_head, n_embd, padded_vocab_size),
/// then the tensors grouped by kind across layers: wte (padded_vocab_size
/// rows), wpe, ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw,
/// fcb, fcprojw, fcprojb, lnfw, lnfb, Linear weights (out, in). The file
/// ends after the last tensor. llm.c's GPT-2 has biases and tanh GELU.

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "gpt2/io/model_source.h"
#include "gpt2/io/state_dict.h"
#include "gpt2/model/config.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// llm.c's header magic.
constexpr int32_t kLlmcMagic = 20240326;

/// An llm.c file's contents.
struct LlmcContents {
  /// From the header: sizes, biases, tanh GELU.
  GPTConfig config;
  /// By nanoGPT name, as stored (float32 or bfloat16), padding rows dropped.
  StateDict tensors;
  /// Version 3 or 5.
  LlmcDtype dtype = LlmcDtype::kFloat32;
  /// wte's rows in the file, padding included.
  int64_t padded_vocab_size = 0;
};

/// Parses a whole llm.c file held in `bytes`; every size is checked against
/// `bytes` before it is used. Throws FormatError naming `source` and the rule.
LlmcContents parse_llmc(std::string_view bytes, const std::string& source);

/// The model an llm.c file describes, float32, loaded through load_state_dict.
/// `options.mmap()` says whether the weights of a float32 file stay in its
/// pages (Mmap); a bfloat16 file's are converted, so copied, either way.
GPT load_llmc(const std::string& path, const LoadOptions& options = {});

/// Loads an llm.c file into `model` (converted to its dtype) through
/// load_state_dict: on any problem `model` is bit-identical to before.
void load_llmc(const std::string& path, GPTImpl& model);

/// The model parsed contents describe; `source` names them in errors.
GPT model_from_llmc(const LlmcContents& contents, const std::string& source);

/// The bytes of `model` as an llm.c file: wte padded with zero rows to a
/// multiple of 128. Throws FormatError unless the model has biases and tanh
/// GELU, as llm.c's does. A model on another device is written from CPU
/// copies; FileError naming the tensor and `file` where its values cannot
/// be read (the meta device).
std::string llmc_bytes(const GPTImpl& model, LlmcDtype dtype = LlmcDtype::kFloat32,
                       const std::string& file = "an llm.c file");

/// Writes llmc_bytes(model, dtype) to `path` atomically.
void save_llmc(const std::string& path, const GPTImpl& model, LlmcDtype dtype = LlmcDtype::kFloat32);

}  // namespace gpt2
