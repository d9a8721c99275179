#include "gpt2/io/nanogpt.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "gpt2/error.h"
#include "gpt2/file/read_file.h"
#include "gpt2/io/checkpoint/torch_archive.h"
#include "gpt2/io/detail/mapped_tensor.h"
#include "gpt2/io/import.h"
#include "gpt2/io/state_dict.h"

namespace gpt2 {
namespace {

using detail::PValue;
using Kind = PValue::Kind;

// A number: int or float (nanoGPT's dropout may be 0 or 0.0).
std::optional<double> number(const PValue* v) {
  if (v && v->kind == Kind::kFloat) return v->f;
  if (v && v->kind == Kind::kInt) return static_cast<double>(v->i);
  return std::nullopt;
}

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
      problems.push_back(fmt::format("model_args['{}'] is {}, expected int", key,
                                     v ? v->describe() : "missing"));
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
  if (const auto d = number(args->get("dropout"))) c.dropout(*d);
  else if (args->get("dropout")) problems.push_back("model_args['dropout'] is not a number");
  return c;
}

// A 0-d tensor or a number, as best_val_loss and a step are.
std::optional<double> scalar(const detail::TorchArchive& archive, const PValue* v) {
  if (v && v->kind == Kind::kTensor && v->tensor->sizes.empty()) {
    return archive.tensor(*v->tensor).to(torch::kDouble).item<double>();
  }
  return number(v);
}

StoredFields config_fields(const PValue* config, std::vector<std::string>& notes,
                           const std::string& path) {
  StoredFields out;
  if (!config || config->kind != Kind::kDict) return out;
  std::vector<std::string> skipped;
  for (const auto& [key, v] : config->entries) {
    switch (v->kind) {
      case Kind::kInt: out.emplace_back(key, v->i); break;
      case Kind::kBool: out.emplace_back(key, v->b); break;
      case Kind::kFloat: out.emplace_back(key, v->f); break;
      case Kind::kString: out.emplace_back(key, v->s); break;
      default: skipped.push_back(key);
    }
  }
  if (!skipped.empty()) {
    notes.push_back(fmt::format("'{}': config entries that are not int, bool, float or str are "
                                "not kept: {}", path, fmt::join(skipped, ", ")));
  }
  return out;
}

NanoGPTAdamW adamw_of(const detail::TorchArchive& archive, const PValue& opt,
                      const GPTConfig& config, const StateDict& weights,
                      std::vector<std::string>& problems) {
  NanoGPTAdamW out;
  const auto names = nanogpt_param_groups(config);
  const PValue* groups = opt.get("param_groups");
  const PValue* state = opt.get("state");
  if (!groups || groups->kind != Kind::kList || groups->items.size() != 2 || !state ||
      state->kind != Kind::kDict || (!state->entries.empty() && !state->int_keys)) {
    problems.push_back("optimizer is not AdamW's state_dict over nanoGPT's two parameter groups "
                       "(state keyed by int, param_groups a list of 2)");
    return out;
  }
  for (size_t g = 0; g < 2; ++g) {
    const PValue& group = *groups->items[g];
    const PValue* params = group.get("params");
    const PValue* betas = group.get("betas");
    NanoGPTAdamW::Group o;
    const auto lr = number(group.get("lr")), wd = number(group.get("weight_decay")),
               eps = number(group.get("eps"));
    const PValue* amsgrad = group.get("amsgrad");
    if (!params || params->kind != Kind::kList || !lr || !wd || !eps || !betas ||
        betas->kind != Kind::kTuple || betas->items.size() != 2 || !number(betas->items[0].get()) ||
        !number(betas->items[1].get()) || (amsgrad && amsgrad->kind == Kind::kBool && amsgrad->b)) {
      problems.push_back(fmt::format("optimizer param_groups[{}] is not an AdamW group "
                                     "(params, lr, betas, eps, weight_decay; amsgrad off)", g));
      continue;
    }
    o.lr = *lr, o.weight_decay = *wd, o.eps = *eps;
    o.beta1 = *number(betas->items[0].get()), o.beta2 = *number(betas->items[1].get());
    if (params->items.size() != names[g].size()) {
      problems.push_back(fmt::format("optimizer param_groups[{}] holds {} parameters; nanoGPT's "
                                     "{} group of this model holds {}", g, params->items.size(),
                                     g == 0 ? "decay" : "no-decay", names[g].size()));
      continue;
    }
    o.names = names[g];
    for (size_t j = 0; j < params->items.size(); ++j) {
      const PValue& id = *params->items[j];
      const std::string& name = names[g][j];
      if (id.kind != Kind::kInt) {
        problems.push_back(fmt::format("optimizer param_groups[{}] params[{}] is not an int", g, j));
        continue;
      }
      const PValue* s = state->get(std::to_string(id.i));
      if (!s) continue;  // no step taken yet
      const PValue* m = s->kind == Kind::kDict ? s->get("exp_avg") : nullptr;
      const PValue* v = s->kind == Kind::kDict ? s->get("exp_avg_sq") : nullptr;
      const auto step = s->kind == Kind::kDict ? scalar(archive, s->get("step")) : std::nullopt;
      const auto found = weights.find(name);
      if (found == weights.end()) continue;  // the state-dict check names it
      const auto& want = found->second;
      const auto fits = [&](const PValue* t) {
        return t && t->kind == Kind::kTensor && t->tensor->sizes == want.sizes().vec();
      };
      if (!fits(m) || !fits(v) || !step || *step < 0) {
        problems.push_back(fmt::format("optimizer state {} (position {} of group {}, {}) is not "
                                       "AdamW's step, exp_avg and exp_avg_sq of shape {}",
                                       id.i, j, g, name, c10::str(want.sizes())));
        continue;
      }
      out.state[name] = {static_cast<int64_t>(*step), archive.tensor(*m->tensor).clone(),
                         archive.tensor(*v->tensor).clone()};
    }
    out.groups.push_back(std::move(o));
  }
  return out;
}

}  // namespace

std::array<std::vector<std::string>, 2> nanogpt_param_groups(const GPTConfig& c) {
  std::array<std::vector<std::string>, 2> out;
  const auto add = [&](const std::string& name, bool matrix) {
    if (matrix || c.bias() || name.substr(name.size() - 5) != ".bias") out[matrix ? 0 : 1].push_back(name);
  };
  add("transformer.wte.weight", true);
  add("transformer.wpe.weight", true);
  for (int64_t i = 0; i < c.n_layer(); ++i) {
    const std::string h = fmt::format("transformer.h.{}.", i);
    for (const char* m : {"ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"}) {
      const bool linear = std::string(m).find("c_") != std::string::npos;
      add(h + m + ".weight", linear);
      add(h + m + ".bias", false);
    }
  }
  add("transformer.ln_f.weight", false);
  add("transformer.ln_f.bias", false);
  return out;
}

NanoGPTCheckpoint load_nanogpt(const std::string& path, const NanoGPTReadOptions& options) {
  require_regular_file(path);
  detail::ModelFileBytes file = detail::model_file_bytes(path, options.mmap());
  const std::string_view bytes = file.bytes;
  const detail::TorchArchive archive(bytes, path, std::move(file), detail::ArchiveKind::kTorchSave);
  const PValue& root = archive.root();
  std::vector<std::string> problems;
  NanoGPTCheckpoint out;
  if (root.kind != Kind::kDict || !root.get("model") || !root.get("model_args")) {
    std::vector<std::string> keys;
    for (const auto& [key, v] : root.entries) keys.push_back("'" + key + "'");
    throw CheckpointError(fmt::format(
        "'{}' is a PyTorch pickle archive (Python's torch.save) but not a nanoGPT checkpoint: "
        "it holds {}, not train.py's dict with 'model' and 'model_args'", path,
        root.kind != Kind::kDict ? "a " + root.describe()
        : keys.empty()           ? std::string("an empty dict")
                                 : fmt::format("a dict of {}", fmt::join(keys, ", "))));
  }
  const GPTConfig config = config_of(root.get("model_args"), problems);
  const PValue& model = *root.get("model");
  if (model.kind != Kind::kDict || model.int_keys) problems.push_back("model is not a state dict");
  StateDict tensors;
  std::set<std::string> dropped;
  for (const auto& [key, v] : model.entries) {
    std::string name = key.rfind(kCompiledPrefix, 0) == 0 ? key.substr(10) : key;
    if (v->kind != Kind::kTensor) {
      problems.push_back(fmt::format("model['{}'] is a {}, not a tensor", key, v->describe()));
      continue;
    }
    if (archive.damaged(*v->tensor)) {
      problems.push_back(fmt::format("checksum mismatch for {}: its zip record data/{} fails its "
                                     "CRC-32", name, v->tensor->storage_key));
    }
    // nanoGPT's causal mask (a buffer on torch < 2.0): not a weight.
    if (name.size() > 10 && name.substr(name.size() - 10) == ".attn.bias" && v->tensor->sizes.size() == 4) {
      dropped.insert(name);
      continue;
    }
    if (!tensors.emplace(name, archive.tensor(*v->tensor)).second) {
      problems.push_back(fmt::format("{} is in the state dict twice (with and without '{}')", name,
                                     kCompiledPrefix));
    }
  }
  if (!dropped.empty()) {
    out.notes.push_back(fmt::format("'{}': {} causal-mask buffers (attn.bias) dropped", path,
                                    dropped.size()));
  }
  torch::ScalarType dtype = torch::kFloat;
  auto wte = tensors.find("transformer.wte.weight");
  if (wte != tensors.end() && wte->second.scalar_type() == torch::kDouble) dtype = torch::kDouble;
  if (wte != tensors.end() && wte->second.scalar_type() != dtype) {
    out.notes.push_back(fmt::format("'{}' stores {} weights: converted to {} at load", path,
                                    c10::toString(wte->second.scalar_type()), c10::toString(dtype)));
  }
  const PValue* opt = root.get("optimizer");
  if (options.optimizer() && problems.empty()) {
    if (!opt || opt->kind != Kind::kDict) {
      problems.push_back("it holds no optimizer state dict");
    } else {
      out.optimizer = adamw_of(archive, *opt, config, tensors, problems);
    }
  }
  out.model = detail::build_and_load(config, detail::converted(tensors, dtype), dtype, path,
                                     std::move(problems));
  if (const PValue* it = root.get("iter_num"); it && it->kind == Kind::kInt) out.run.iter_num = it->i;
  if (const auto best = scalar(archive, root.get("best_val_loss"))) out.run.best_val_loss = *best;
  out.run.config = config_fields(root.get("config"), out.notes, path);
  out.nonfinite = nonfinite_report(*out.model);
  for (const auto& n : out.nonfinite) out.notes.push_back(fmt::format("'{}': {}", path, n));
  return out;
}

}  // namespace gpt2
