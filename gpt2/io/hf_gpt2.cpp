#include "gpt2/io/hf_gpt2.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <memory>
#include <fstream>
#include <set>
#include <sstream>

#include "gpt2/error.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/file/output_dir.h"
#include "gpt2/file/read_file.h"
#include "gpt2/io/detail/hf_config.h"
#include "gpt2/io/detail/mapped_tensor.h"
#include "gpt2/io/detail/on_threads.h"
#include "gpt2/io/detail/safetensors_views.h"
#include "gpt2/io/import.h"
#include "gpt2/ops/memory.h"

namespace gpt2 {
namespace {

using detail::HfConfig;
using detail::parse_config;

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Hugging Face's Conv1D weights, stored (in, out).
bool is_conv1d_weight(const std::string& name) {
  for (const char* leaf : {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight",
                           ".mlp.c_proj.weight"}) {
    if (ends_with(name, leaf)) return true;
  }
  return false;
}

// nanoGPT's state dict from Hugging Face's tensors; lm_head is wte when
// absent, unless `as_stored`.
StateDict to_nanogpt(const SafetensorsContents& contents, std::vector<std::string>& problems,
                     bool as_stored = false) {
  StateDict out;
  for (const auto& [name, tensor] : contents.tensors) {
    const std::string key = name.rfind("transformer.", 0) == 0 ? name.substr(12) : name;
    if (key.rfind("h.", 0) == 0 && (ends_with(key, ".attn.bias") || ends_with(key, ".attn.masked_bias"))) {
      continue;  // attention-mask buffers, not weights
    }
    torch::Tensor t = tensor;
    if (is_conv1d_weight(key)) {
      if (t.dim() != 2) {
        problems.push_back(fmt::format("{} is {}-D, a Conv1D weight is 2-D", name, t.dim()));
        continue;
      }
      t = detail::transposed_on_threads(t);
    }
    const std::string ours = key == "lm_head.weight" ? key : "transformer." + key;
    if (!out.emplace(ours, t).second) problems.push_back(fmt::format("{} is stored twice", ours));
  }
  auto wte = out.find("transformer.wte.weight");
  if (wte != out.end() && !out.count("lm_head.weight") && !as_stored) {
    out["lm_head.weight"] = wte->second;
  }
  return out;
}

// The config the tensors' shapes describe, n_head and GELU from config.json.
std::optional<GPTConfig> infer_config(const StateDict& sd, const HfConfig& hf,
                                      const HfReadOptions& options, std::vector<std::string>& problems) {
  auto wte = sd.find("transformer.wte.weight"), wpe = sd.find("transformer.wpe.weight");
  if (wte == sd.end() || wpe == sd.end() || wte->second.dim() != 2 || wpe->second.dim() != 2) {
    problems.push_back("wte.weight and wpe.weight must both be present and 2-D: the model's "
                       "sizes are read from them");
    return std::nullopt;
  }
  std::set<int64_t> blocks;
  for (const auto& item : sd) {
    const std::string& name = item.first;
    if (name.rfind("transformer.h.", 0) != 0) continue;
    const std::string index = name.substr(14, name.find('.', 14) - 14);
    if (index.empty() || index.size() > 6 || index.find_first_not_of("0123456789") != std::string::npos) {
      problems.push_back(fmt::format("{} has no block number", name));
      return std::nullopt;
    }
    blocks.insert(std::stoll(index));
  }
  const auto n_layer = static_cast<int64_t>(blocks.size());
  if (!blocks.empty() && *blocks.rbegin() != n_layer - 1) {
    problems.push_back(fmt::format("the blocks are numbered up to h.{} but there are {} of them",
                                   *blocks.rbegin(), n_layer));
    return std::nullopt;
  }
  GPTConfig c;
  c.vocab_size(wte->second.size(0)).n_embd(wte->second.size(1)).block_size(wpe->second.size(0));
  c.n_layer(n_layer).bias(sd.count("transformer.ln_f.bias") > 0).gelu(hf.gelu.value_or(Gelu::kTanh));
  auto compare = [&](const char* key, const std::optional<int64_t>& stated, int64_t actual) {
    if (stated && *stated != actual) {
      problems.push_back(fmt::format("config.json {} is {}, the tensors say {}", key, *stated, actual));
    }
  };
  compare("n_layer", hf.n_layer, c.n_layer());
  compare("n_embd", hf.n_embd, c.n_embd());
  compare("vocab_size", hf.vocab_size, c.vocab_size());
  compare("n_positions", hf.n_positions, c.block_size());
  const auto n_head = hf.n_head ? hf.n_head : options.n_head();
  if (!n_head) {
    problems.push_back("n_head cannot be read from the tensor shapes: put Hugging Face's "
                       "config.json beside the file, or give n_head (--n-head)");
    return std::nullopt;
  }
  c.n_head(*n_head);
  return c;
}

// config.json is a few hundred bytes; a far larger one is not GPT-2's.
constexpr uint64_t kMaxConfigBytes = 16u << 20;

// The text of `path`, or "" when nothing is there.
std::string read_text(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return "";
  return read_file(path, "config", kMaxConfigBytes);
}

// `file`, when given, holds the bytes the contents' tensors may view: those
// are copied once here (the Conv1D weights were already, by their
// transpose), or, where `file.view`, viewed in place where contiguous and
// aligned; the model takes every tensor over.
GPT from_contents(const SafetensorsContents& contents, const std::string& config_json,
                  const HfReadOptions& options, const std::string& source,
                  const detail::ModelFileBytes& file = {}) {
  std::vector<std::string> problems;
  const HfConfig hf = parse_config(config_json, problems);
  StateDict sd = to_nanogpt(contents, problems);
  const LoadMode mode = file.holder ? LoadMode::kAdopt : LoadMode::kCopy;
  const std::string_view bytes = file.bytes;
  std::map<const void*, torch::Tensor> copies;  // one copy (or view) of each viewed tensor
  for (auto& [name, t] : sd) {
    const auto* p = static_cast<const char*>(t.data_ptr());
    if (bytes.empty() || p < bytes.data() || p >= bytes.data() + bytes.size()) continue;
    auto& copy = copies[p];
    if (!copy.defined() && t.is_contiguous()) {
      copy = detail::tensor_from_file(file, p, t.sizes(), t.scalar_type(), source);
    }
    if (!copy.defined() && t.is_contiguous()) {
      copy = empty_large(t.sizes(), t.scalar_type());
      detail::read_bytes(file, p, copy.data_ptr(), t.nbytes(), source);
    } else if (!copy.defined()) {
      copy = t.clone();
    }
    t = copy;
  }
  const auto config = infer_config(sd, hf, options, problems);
  if (!config) throw_load_problems(source, problems);
  return detail::build_and_load(*config, sd, options.dtype(), source, std::move(problems), mode);
}

// config.json describes every safetensors file of its folder: replacing it
// with another model's would make the others load as that model. Refused
// (before anything is written) when the folder holds weights other than
// `paths.weights` and its config.json says something else.
void refuse_replacing_another_config(const HfPaths& paths, const std::string& config) {
  std::error_code ec;
  if (!fs::exists(paths.config, ec) || read_text(paths.config) == config) return;
  const fs::path folder = fs::path(paths.weights).parent_path();
  for (const auto& entry : fs::directory_iterator(folder.empty() ? "." : folder, ec)) {
    const fs::path other = entry.path();
    if (other.extension() == ".safetensors" && !same_file(other.string(), paths.weights) &&
        other.filename() != fs::path(paths.weights).filename()) {
      throw FileError(fmt::format(
          "cannot write '{}': its folder's config.json describes '{}' too, a different model "
          "(n_head, GELU); write this model into a folder of its own", paths.weights,
          other.string()));
    }
  }
}

}  // namespace

HfPaths hf_paths(const std::string& path) {
  const fs::path p(path);
  if (fs::is_directory(p) || p.extension() != ".safetensors") {
    return {(p / "model.safetensors").string(), (p / "config.json").string()};
  }
  return {path, (p.parent_path() / "config.json").string()};
}

GPT model_from_safetensors(const SafetensorsContents& contents, const std::string& config_json,
                           const HfReadOptions& options, const std::string& source) {
  return from_contents(contents, config_json, options, source);
}

GPT load_safetensors(const std::string& path, const HfReadOptions& options) {
  const HfPaths paths = hf_paths(path);
  const std::string config = read_text(paths.config);
  const auto file = detail::model_file_bytes(paths.weights, options.mmap());
  return from_contents(detail::parse_safetensors_views(file.bytes, paths.weights), config, options,
                       paths.weights, file);
}

void load_safetensors(const std::string& path, GPTImpl& model) {
  const HfPaths paths = hf_paths(path);
  const SafetensorsContents contents = read_safetensors(paths.weights);
  std::vector<std::string> problems;
  const HfConfig hf = parse_config(read_text(paths.config), problems);
  if (hf.n_head && *hf.n_head != model.config.n_head()) {
    problems.push_back(fmt::format("config.json n_head is {}, model {}", *hf.n_head, model.config.n_head()));
  }
  if (hf.gelu && *hf.gelu != model.config.gelu()) {
    problems.push_back(fmt::format("config.json GELU is {}, model {}", to_string(*hf.gelu),
                                   to_string(model.config.gelu())));
  }
  const StateDict sd = to_nanogpt(contents, problems);
  const auto dtype = model.transformer->wte->weight.scalar_type();
  load_state_dict(detail::converted(sd, dtype), model, paths.weights, std::move(problems));
}

void save_safetensors(const std::string& path, const GPTImpl& model) {
  const HfPaths paths = hf_paths(path);
  SafetensorsContents contents;
  contents.metadata["format"] = "pt";
  torch::NoGradGuard no_grad;
  for (const auto& item : model.named_unique_parameters()) {
    const std::string& name = item.key();
    const std::string key = name.rfind("transformer.", 0) == 0 ? name.substr(12) : name;
    torch::Tensor t = item.value().detach();
    if (t.scalar_type() == torch::kDouble) t = t.to(torch::kFloat);
    contents.tensors.emplace_back(key, is_conv1d_weight(key) ? t.t().contiguous() : t);
  }
  const fs::path folder = fs::path(paths.weights).parent_path();
  if (!folder.empty()) make_output_dir(folder.string(), "model folder");
  const std::string config = hf_config_json(model.config);
  refuse_replacing_another_config(paths, config);
  // One unit: weights and config.json are renamed in together, the config
  // last (a folder without it is refused by the reader).
  const std::string weights = safetensors_bytes(contents, fmt::format("safetensors file '{}'", paths.weights));
  write_files_atomically({{paths.weights, weights}, {paths.config, config}});
}

StateDict read_safetensors_tensors(const std::string& path) {
  std::vector<std::string> problems;
  StateDict tensors = to_nanogpt(read_safetensors(hf_paths(path).weights), problems, true);
  if (!problems.empty()) throw_load_problems(path, problems);
  return tensors;
}

}  // namespace gpt2
