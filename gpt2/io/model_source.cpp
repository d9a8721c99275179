#include "gpt2/io/model_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "gpt2/error.h"
#include "gpt2/file/mapped_file.h"
#include "gpt2/file/read_file.h"
#include "gpt2/io/checkpoint/zip_reader.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/io/detail/mapped_tensor.h"
#include "gpt2/io/hf_gpt2.h"
#include "gpt2/io/llmc.h"
#include "gpt2/io/nanogpt.h"
#include "gpt2/io/state_dict.h"

namespace gpt2 {
namespace {

namespace fs = std::filesystem;

// A zip as Python's torch.save writes it: data.pkl, no constants.pkl or
// code/ (a TorchScript archive has both). Anything the zip layer refuses is
// left to the checkpoint reader to name.
bool is_torch_save_zip(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  try {
    const detail::MappedFile file(path);
    const detail::ZipReader zip(file.bytes(), path);
    if (zip.records().empty()) return false;
    const std::string& first = zip.records().front().name;
    const std::string prefix = first.substr(0, first.find('/') + 1);
    return zip.find(prefix + "data.pkl") && !zip.find(prefix + "constants.pkl") &&
           !zip.find(prefix + "code/__torch__.py");
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

template <>
const std::vector<std::pair<ModelFormat, std::string>>& names<ModelFormat>() {
  static const std::vector<std::pair<ModelFormat, std::string>> kNames = {
      {ModelFormat::kCheckpoint, "checkpoint"},
      {ModelFormat::kSafetensors, "safetensors"},
      {ModelFormat::kLlmc, "llmc"},
      {ModelFormat::kNanoGPT, "nanogpt"}};
  return kNames;
}

template <>
const std::vector<std::pair<LlmcDtype, std::string>>& names<LlmcDtype>() {
  static const std::vector<std::pair<LlmcDtype, std::string>> kNames = {
      {LlmcDtype::kFloat32, "float32"}, {LlmcDtype::kBFloat16, "bfloat16"}};
  return kNames;
}

std::string to_string(ModelFormat format) { return enum_name(format); }
std::string to_string(LlmcDtype dtype) { return enum_name(dtype); }

ModelFormat model_format_from_string(const std::string& name) {
  return enum_from_name<ModelFormat>(name, "model format");
}

ModelFormat detect_model_format(const std::string& path) {
  const fs::path p(path);
  const std::string ext = p.extension().string();
  if (fs::is_directory(p) || ext == ".safetensors" || path.back() == '/') return ModelFormat::kSafetensors;
  if (ext == ".bin") return ModelFormat::kLlmc;
  if (ext == ".pt") {
    return is_torch_save_zip(path) ? ModelFormat::kNanoGPT : ModelFormat::kCheckpoint;
  }
  // Told by the first bytes: llm.c's magic, or a safetensors header length
  // (8 bytes, little-endian) followed by '{'; anything else is read as a
  // checkpoint, whose reader names the file if it is not one.
  const InputFile file(path);  // a FIFO, device or missing file, named
  char head[9] = {};
  if (::read(file.fd(), head, sizeof head) < 0) throw file.error(errno_text(errno));
  int32_t magic = 0;
  std::memcpy(&magic, head, sizeof magic);
  if (magic == kLlmcMagic) return ModelFormat::kLlmc;
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | static_cast<unsigned char>(head[i]);
  if (head[8] == '{' && header < file.size()) return ModelFormat::kSafetensors;
  return is_torch_save_zip(path) ? ModelFormat::kNanoGPT : ModelFormat::kCheckpoint;
}

LoadedModel load_model_file(const std::string& path, const ModelSourceOptions& options) {
  LoadedModel out;
  std::vector<std::string> nonfinite;
  out.format = options.format() ? *options.format() : detect_model_format(path);
  switch (out.format) {
    case ModelFormat::kCheckpoint: {
      Checkpoint c = load_checkpoint(path, LoadOptions().mmap(options.mmap()));
      out.model = c.model;
      out.notes = c.notes;
      nonfinite = c.nonfinite;  // the checkpoint's gate scanned them
      break;
    }
    case ModelFormat::kSafetensors:
      out.model =
          load_safetensors(path, HfReadOptions().n_head(options.n_head()).mmap(options.mmap()));
      break;
    case ModelFormat::kLlmc:
      out.model = load_llmc(path, LoadOptions().mmap(options.mmap()));
      break;
    case ModelFormat::kNanoGPT: {
      NanoGPTCheckpoint c = load_nanogpt(path, NanoGPTReadOptions().mmap(options.mmap()));
      out.model = c.model;
      out.notes = c.notes;
      nonfinite = c.nonfinite;
      break;
    }
  }
  if (out.format != ModelFormat::kCheckpoint && out.format != ModelFormat::kNanoGPT) {
    nonfinite = nonfinite_report(*out.model);
    for (const auto& note : nonfinite) out.notes.push_back(fmt::format("'{}': {}", path, note));
  }
  if (!nonfinite.empty() && !options.allow_nonfinite()) {
    throw FormatError(fmt::format("'{}': {}: weights that are not finite give NaN logits, so the "
                                  "model is refused (gpt2 inspect names them)", path,
                                  fmt::join(nonfinite, "; ")));
  }
  return out;
}

FileTensors read_model_tensors(const std::string& path, const ModelSourceOptions& options) {
  FileTensors out;
  out.format = options.format() ? *options.format() : detect_model_format(path);
  switch (out.format) {
    case ModelFormat::kCheckpoint:
      out.tensors = read_checkpoint_tensors(path);
      out.one_storage_possible = true;
      break;
    case ModelFormat::kSafetensors:
      out.tensors = read_safetensors_tensors(path);
      break;
    case ModelFormat::kLlmc: {
      require_regular_file(path);
      const auto file = detail::model_file_bytes(path, Mmap::kOff);
      out.tensors = parse_llmc(file.bytes, path).tensors;
      out.tensors.erase("lm_head.weight");  // the format holds wte alone
      break;
    }
    case ModelFormat::kNanoGPT:
      out.tensors = read_nanogpt_tensors(path);
      out.one_storage_possible = true;
      break;
  }
  return out;
}

GPT load_model(const std::string& path, const ModelSourceOptions& options) {
  return load_model_file(path, options).model;
}

ModelFormat save_model(const std::string& path, const GPTImpl& model,
                       const ModelSaveOptions& options) {
  std::error_code ec;
  if (!options.format() && !path.empty() && !fs::exists(path, ec) && path.back() != '/') {
    const std::string ext = fs::path(path).extension().string();
    if (ext != ".pt" && ext != ".bin" && ext != ".safetensors") {
      throw ConfigError(fmt::format(
          "cannot tell which format to write '{}' in from its name: end it in .pt (checkpoint), "
          ".safetensors or / (Hugging Face), or .bin (llm.c), or name the format", path));
    }
  }
  const ModelFormat format = options.format() ? *options.format() : detect_model_format(path);
  switch (format) {
    case ModelFormat::kCheckpoint:
      save_checkpoint(path, model);
      break;
    case ModelFormat::kSafetensors:
      save_safetensors(path, model);
      break;
    case ModelFormat::kLlmc:
      save_llmc(path, model, options.llmc_dtype());
      break;
    case ModelFormat::kNanoGPT:
      save_nanogpt(path, model);
      break;
  }
  return format;
}

}  // namespace gpt2
