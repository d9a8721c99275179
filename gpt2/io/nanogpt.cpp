#include "gpt2/io/nanogpt.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "gpt2/error.h"
#include "gpt2/file/read_file.h"
#include "gpt2/io/checkpoint/torch_archive.h"
#include "gpt2/io/detail/mapped_tensor.h"
#include "gpt2/io/detail/nanogpt_pickle.h"
#include "gpt2/io/import.h"
#include "gpt2/io/state_dict.h"

namespace gpt2 {
namespace {

using detail::number;
using detail::scalar;

using detail::PValue;
using Kind = PValue::Kind;

// model_args as the config: nanoGPT's GELU, its fields checked for type.
GPTConfig config_of(const PValue* args, std::vector<std::string>& problems) {
  GPTConfig c;
  c.gelu(Gelu::kExact);  // nanoGPT's MLP: nn.GELU()
  if (!args || args->kind != Kind::kDict) {
    problems.push_back("model_args is not a dict");
    return c;
  }
  const auto get_int = [&](const char* key, int64_t& to) {
    const PValue* v = args->get(key);
    if (!v || v->kind != Kind::kInt) {
      problems.push_back(
          fmt::format("model_args['{}'] is {}, expected int", key, v ? v->describe() : "missing"));
    } else {
      to = v->i;
    }
  };
  get_int("n_layer", c.n_layer());
  get_int("n_head", c.n_head());
  get_int("n_embd", c.n_embd());
  get_int("block_size", c.block_size());
  get_int("vocab_size", c.vocab_size());
  const PValue* bias = args->get("bias");
  if (!bias || bias->kind != Kind::kBool) {
    problems.push_back(fmt::format("model_args['bias'] is {}, expected bool",
                                   bias ? bias->describe() : "missing"));
  } else {
    c.bias(bias->b);
  }
  if (const auto d = number(args->get("dropout")))
    c.dropout(*d);
  else if (args->get("dropout"))
    problems.push_back("model_args['dropout'] is not a number");
  return c;
}

// train.py's config dict: its int, bool, float and str entries.
StoredFields config_fields(const PValue* config, std::vector<std::string>& notes,
                           const std::string& path) {
  StoredFields out;
  if (!config || config->kind != Kind::kDict) return out;
  std::vector<std::string> skipped;
  for (const auto& [key, v] : config->entries) {
    switch (v->kind) {
      case Kind::kInt:
        out.emplace_back(key, v->i);
        break;
      case Kind::kBool:
        out.emplace_back(key, v->b);
        break;
      case Kind::kFloat:
        out.emplace_back(key, v->f);
        break;
      case Kind::kString:
        out.emplace_back(key, v->s);
        break;
      default:
        skipped.push_back(key);
    }
  }
  if (!skipped.empty()) {
    notes.push_back(
        fmt::format("'{}': config entries that are not int, bool, float or str are "
                    "not kept: {}",
                    path, fmt::join(skipped, ", ")));
  }
  return out;
}
// Reads the ckpt.pt `path` names from its `bytes` (of `file`, whose views
// the tensors may take).
// Throws CheckpointError unless `root` is train.py's dict.
void check_root(const PValue& root, const std::string& path) {
  if (root.kind == Kind::kDict && root.get("model") && root.get("model_args")) return;
  std::vector<std::string> keys;
  for (const auto& [key, v] : root.entries) keys.push_back("'" + key + "'");
  throw CheckpointError(fmt::format(
      "'{}' is a PyTorch pickle archive (Python's torch.save) but not a nanoGPT checkpoint: "
      "it holds {}, not train.py's dict with 'model' and 'model_args'",
      path,
      root.kind != Kind::kDict ? "a " + root.describe()
      : keys.empty()           ? std::string("an empty dict")
                               : fmt::format("a dict of {}", fmt::join(keys, ", "))));
}

// root['model']'s tensors by nanoGPT name (torch.compile's prefix dropped),
// as stored: names of one storage share it. The causal-mask buffers of
// torch < 2.0 are left out and named in `dropped`.
StateDict model_tensors(const detail::TorchArchive& archive, const PValue& model,
                        std::vector<std::string>& problems, std::set<std::string>& dropped) {
  if (model.kind != Kind::kDict || model.int_keys) problems.push_back("model is not a state dict");
  StateDict tensors;
  for (const auto& [key, v] : model.entries) {
    std::string name = key.rfind(kCompiledPrefix, 0) == 0 ? key.substr(10) : key;
    if (v->kind != Kind::kTensor) {
      problems.push_back(fmt::format("model['{}'] is a {}, not a tensor", key, v->describe()));
      continue;
    }
    if (archive.damaged(*v->tensor)) {
      problems.push_back(
          fmt::format("checksum mismatch for {}: its zip record data/{} fails its "
                      "CRC-32",
                      name, v->tensor->storage_key));
    }
    // nanoGPT's causal mask (a buffer on torch < 2.0): not a weight.
    if (name.size() > 10 && name.substr(name.size() - 10) == ".attn.bias" &&
        v->tensor->sizes.size() == 4) {
      dropped.insert(name);
      continue;
    }
    if (!tensors.emplace(name, archive.tensor(*v->tensor)).second) {
      problems.push_back(fmt::format("{} is in the state dict twice (with and without '{}')", name,
                                     kCompiledPrefix));
    }
  }
  return tensors;
}

NanoGPTCheckpoint read(const std::string& path, std::string_view bytes, detail::ModelFileBytes file,
                       const NanoGPTReadOptions& options) {
  const detail::TorchArchive archive(bytes, path, std::move(file), detail::ArchiveKind::kTorchSave);
  const PValue& root = archive.root();
  check_root(root, path);
  std::vector<std::string> problems;
  NanoGPTCheckpoint out;
  const GPTConfig config = config_of(root.get("model_args"), problems);
  const bool config_ok = problems.empty();
  std::set<std::string> dropped;
  StateDict tensors = model_tensors(archive, *root.get("model"), problems, dropped);
  if (!dropped.empty()) {
    out.notes.push_back(
        fmt::format("'{}': {} causal-mask buffers (attn.bias) dropped", path, dropped.size()));
  }
  torch::ScalarType dtype = torch::kFloat;
  auto wte = tensors.find("transformer.wte.weight");
  if (wte != tensors.end() && wte->second.scalar_type() == torch::kDouble) dtype = torch::kDouble;
  if (wte != tensors.end() && wte->second.scalar_type() != dtype) {
    out.notes.push_back(fmt::format("'{}' stores {} weights: converted to {} at load", path,
                                    c10::toString(wte->second.scalar_type()),
                                    c10::toString(dtype)));
  }
  const PValue* opt = root.get("optimizer");
  if (options.optimizer() && problems.empty()) {
    if (!opt || opt->kind != Kind::kDict) {
      problems.push_back("it holds no optimizer state dict");
    } else {
      out.optimizer = detail::read_nanogpt_adamw(archive, *opt, config, tensors, problems);
    }
  }
  if (const PValue* it = root.get("iter_num")) {
    if (it->kind != Kind::kInt || it->i < 0) {
      problems.push_back(fmt::format("iter_num is {}, not an int >= 0", it->kind == Kind::kInt
                                                                            ? std::to_string(it->i)
                                                                            : it->describe()));
    }
    out.run.iter_num = it->i;
  }
  // A model_args field that did not read leaves a default in the config:
  // the tensors' shapes held against it would be problems of that default.
  if (!config_ok) throw_load_problems(path, problems);
  out.model = detail::build_and_load(config, detail::converted(tensors, dtype), dtype, path,
                                     std::move(problems));
  if (const auto best = scalar(archive, root.get("best_val_loss"))) out.run.best_val_loss = *best;
  out.run.config = config_fields(root.get("config"), out.notes, path);
  out.nonfinite = nonfinite_report(*out.model);
  for (const auto& n : out.nonfinite) out.notes.push_back(fmt::format("'{}': {}", path, n));
  return out;
}

}  // namespace

NanoGPTCheckpoint load_nanogpt(const std::string& path, const NanoGPTReadOptions& options) {
  require_regular_file(path);
  detail::ModelFileBytes file = detail::model_file_bytes(path, options.mmap());
  const std::string_view bytes = file.bytes;
  return read(path, bytes, std::move(file), options);
}

StateDict read_nanogpt_tensors(const std::string& path) {
  require_regular_file(path);
  detail::ModelFileBytes file = detail::model_file_bytes(path, Mmap::kOff);
  const std::string_view bytes = file.bytes;
  const detail::TorchArchive archive(bytes, path, std::move(file), detail::ArchiveKind::kTorchSave);
  check_root(archive.root(), path);
  std::vector<std::string> problems;
  std::set<std::string> dropped;
  StateDict tensors = model_tensors(archive, *archive.root().get("model"), problems, dropped);
  if (!problems.empty()) throw_load_problems(path, problems);
  return tensors;
}

NanoGPTCheckpoint load_nanogpt_bytes(std::string_view bytes, const std::string& name,
                                     const NanoGPTReadOptions& options) {
  return read(name, bytes, {}, options);
}

}  // namespace gpt2
