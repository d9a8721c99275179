#include "gpt2/io/llmc.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>

#include "gpt2/error.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/file/mapped_file.h"
#include "gpt2/io/detail/host_tensor.h"
#include "gpt2/io/detail/mapped_tensor.h"
#include "gpt2/io/import.h"
#include "gpt2/ops/memory.h"

namespace gpt2 {
namespace {

constexpr size_t kHeaderBytes = 256 * sizeof(int32_t);

// The tensor kinds in file order: the nanoGPT leaf name (per block when
// `per_layer`) and the shape of one block's slice, from C and the vocab rows.
struct Kind {
  const char* name;
  bool per_layer;
  int64_t rows_c, cols_c;  // shape (rows_c * C, cols_c * C); 0 means absent dim
};
constexpr Kind kKinds[] = {
    {"wte.weight", false, -1, 1},  // rows: padded vocab
    {"wpe.weight", false, -2, 1},  // rows: max_seq_len
    {"ln_1.weight", true, 1, 0},        {"ln_1.bias", true, 1, 0},
    {"attn.c_attn.weight", true, 3, 1}, {"attn.c_attn.bias", true, 3, 0},
    {"attn.c_proj.weight", true, 1, 1}, {"attn.c_proj.bias", true, 1, 0},
    {"ln_2.weight", true, 1, 0},        {"ln_2.bias", true, 1, 0},
    {"mlp.c_fc.weight", true, 4, 1},    {"mlp.c_fc.bias", true, 4, 0},
    {"mlp.c_proj.weight", true, 1, 4},  {"mlp.c_proj.bias", true, 1, 0},
    {"ln_f.weight", false, 1, 0},       {"ln_f.bias", false, 1, 0},
};

std::vector<int64_t> slice_shape(const Kind& k, int64_t c, int64_t vp, int64_t t) {
  const int64_t rows = k.rows_c == -1 ? vp : k.rows_c == -2 ? t : k.rows_c * c;
  if (k.cols_c == 0) return {rows};
  return {rows, k.cols_c * c};
}

std::string nanogpt_name(const Kind& k, int64_t layer) {
  return k.per_layer ? fmt::format("transformer.h.{}.{}", layer, k.name)
                     : fmt::format("transformer.{}", k.name);
}

[[noreturn]] void fail_llmc(const std::string& source, const std::string& rule) {
  throw FormatError(fmt::format("'{}' is not a valid llm.c model file: {}", source, rule));
}

// parse_llmc of `file.bytes`, the float32 tensors made as `file` says
// (tensor_from_file), the others read into storage of their own.
LlmcContents parse(const detail::ModelFileBytes& file, const std::string& source) {
  const std::string_view bytes = file.bytes;
  if (bytes.size() < kHeaderBytes) {
    fail_llmc(source, fmt::format("{} bytes, shorter than the {}-byte header", bytes.size(), kHeaderBytes));
  }
  int32_t h[256];
  std::memcpy(h, bytes.data(), kHeaderBytes);
  if (h[0] != kLlmcMagic) fail_llmc(source, fmt::format("magic {}, expected {}", h[0], kLlmcMagic));
  if (h[1] != 3 && h[1] != 5) fail_llmc(source, fmt::format("version {}, expected 3 (float32) or 5 (bfloat16)", h[1]));
  const char* fields[] = {"max_seq_len", "vocab_size", "n_layer", "n_head", "n_embd", "padded_vocab_size"};
  for (int i = 0; i < 6; ++i) {
    if (h[2 + i] <= 0) fail_llmc(source, fmt::format("header {} is {}, must be positive", fields[i], h[2 + i]));
  }
  const int64_t t = h[2], v = h[3], l = h[4], c = h[6], vp = h[7];
  if (vp < v) fail_llmc(source, fmt::format("padded_vocab_size {} is smaller than vocab_size {}", vp, v));
  LlmcContents out;
  out.dtype = h[1] == 3 ? LlmcDtype::kFloat32 : LlmcDtype::kBFloat16;
  out.padded_vocab_size = vp;
  out.config.block_size(t).vocab_size(v).n_layer(l).n_head(h[5]).n_embd(c).bias(true).gelu(Gelu::kTanh);
  const uint64_t item = out.dtype == LlmcDtype::kFloat32 ? 4 : 2;
  // Every size in 64 bits from 31-bit fields: at most 2^31 * 4 * 2^31 * 2^31
  // would overflow, so each step is checked.
  uint64_t total = 0;
  for (const Kind& k : kKinds) {
    uint64_t n = k.per_layer ? static_cast<uint64_t>(l) : 1;
    for (int64_t d : slice_shape(k, c, vp, t)) {
      if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) fail_llmc(source, "the tensor sizes overflow");
    }
    if (__builtin_add_overflow(total, n, &total)) fail_llmc(source, "the tensor sizes overflow");
  }
  uint64_t data = 0;
  if (__builtin_mul_overflow(total, item, &data) || data != bytes.size() - kHeaderBytes) {
    fail_llmc(source, fmt::format("the header describes {} values ({} bytes each) after the header, "
                             "the file holds {} bytes there", total, item, bytes.size() - kHeaderBytes));
  }
  const auto dtype = out.dtype == LlmcDtype::kFloat32 ? torch::kFloat : torch::kBFloat16;
  const char* at = bytes.data() + kHeaderBytes;
  for (const Kind& k : kKinds) {
    const auto shape = slice_shape(k, c, vp, t);
    for (int64_t layer = 0; layer < (k.per_layer ? l : 1); ++layer) {
      auto kept = shape;
      if (k.rows_c == -1) kept[0] = v;  // the padding rows are skipped
      torch::Tensor tensor;
      if (dtype == torch::kFloat) tensor = detail::tensor_from_file(file, at, kept, dtype, source);
      if (!tensor.defined()) {
        tensor = empty_large(kept, dtype);
        detail::read_bytes(file, at, tensor.data_ptr(), tensor.nbytes(), source);
      }
      int64_t stored = static_cast<int64_t>(item);  // bytes in the file, padding rows included
      for (const int64_t d : shape) stored *= d;
      at += stored;
      out.tensors[nanogpt_name(k, layer)] = tensor;
    }
  }
  out.tensors["lm_head.weight"] = out.tensors.at("transformer.wte.weight");
  return out;
}

}  // namespace

LlmcContents parse_llmc(std::string_view bytes, const std::string& source) {
  detail::ModelFileBytes file;
  file.bytes = bytes;
  return parse(file, source);
}

GPT model_from_llmc(const LlmcContents& contents, const std::string& source) {
  return detail::build_and_load(contents.config, contents.tensors, torch::kFloat, source, {});
}

GPT load_llmc(const std::string& path, const LoadOptions& options) {
  const auto file = detail::model_file_bytes(path, options.mmap());
  // The tensors were read for this model alone (or view the file's pages):
  // it takes them over.
  const LlmcContents contents = parse(file, path);
  return detail::build_and_load(contents.config, contents.tensors, torch::kFloat, path, {},
                                LoadMode::kAdopt);
}

void load_llmc(const std::string& path, GPTImpl& model) {
  const detail::MappedFile file(path);
  const LlmcContents contents = parse_llmc(file.bytes(), path);
  std::vector<std::string> problems;
  if (contents.config.n_head() != model.config.n_head()) {
    problems.push_back(fmt::format("n_head differs: file {}, model {}", contents.config.n_head(),
                                   model.config.n_head()));
  }
  if (model.config.gelu() != Gelu::kTanh) problems.push_back("llm.c's GELU is tanh, the model's is exact");
  const auto dtype = model.transformer->wte->weight.scalar_type();
  load_state_dict(detail::converted(contents.tensors, dtype), model, path, std::move(problems));
}

std::string llmc_bytes(const GPTImpl& model, LlmcDtype dtype, const std::string& file) {
  const GPTConfig& cfg = model.config;
  if (!cfg.bias() || cfg.gelu() != Gelu::kTanh) {
    throw FormatError(fmt::format("an llm.c file holds a GPT-2 with biases and tanh GELU; this "
                                  "model has bias {}, GELU {}", cfg.bias(), to_string(cfg.gelu())));
  }
  const int64_t c = cfg.n_embd(), v = cfg.vocab_size(), vp = (v + 127) / 128 * 128;
  int32_t h[256] = {};
  const int64_t values[] = {kLlmcMagic, dtype == LlmcDtype::kFloat32 ? 3 : 5, cfg.block_size(), v,
                            cfg.n_layer(), cfg.n_head(), c, vp};
  for (int i = 0; i < 8; ++i) {
    if (values[i] > INT32_MAX) throw FormatError(fmt::format("llm.c's header holds int32; {} is too large", values[i]));
    h[i] = static_cast<int32_t>(values[i]);
  }
  std::string out(reinterpret_cast<const char*>(h), kHeaderBytes);
  const auto params = model.named_unique_parameters();
  const auto type = dtype == LlmcDtype::kFloat32 ? torch::kFloat : torch::kBFloat16;
  torch::NoGradGuard no_grad;
  for (const Kind& k : kKinds) {
    for (int64_t layer = 0; layer < (k.per_layer ? cfg.n_layer() : 1); ++layer) {
      const std::string name = nanogpt_name(k, layer);
      torch::Tensor t = detail::host_tensor(params[name], fmt::format("{} of {}", name, file), type);
      if (k.rows_c == -1) t = torch::cat({t, torch::zeros({vp - v, c}, t.options())});
      out.append(detail::host_bytes(t));
    }
  }
  return out;
}

void save_llmc(const std::string& path, const GPTImpl& model, LlmcDtype dtype) {
  write_file_atomically(path, llmc_bytes(model, dtype, fmt::format("llm.c file '{}'", path)));
}

}  // namespace gpt2
