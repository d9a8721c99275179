// save_nanogpt: the dict nanoGPT's train.py saves, through the library's
// torch.save-compatible pickle writer, in the zip LibTorch's
// PyTorchStreamWriter writes (the writer Python's torch.save uses).
#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <variant>

#include "gpt2/error.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/io/checkpoint/pickle_writer.h"
#include "gpt2/io/detail/host_tensor.h"
#include "gpt2/io/nanogpt.h"
#include "gpt2/ops/torch_compat.h"

namespace gpt2 {
namespace {

using detail::PickleWriter;

void value(PickleWriter& w, const StoredValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>)
          w.integer(x);
        else if constexpr (std::is_same_v<T, bool>)
          w.boolean(x);
        else if constexpr (std::is_same_v<T, double>)
          w.real(x);
        else
          w.string(x);
      },
      v);
}

const StoredValue* find(const StoredFields& fields, const char* key) {
  for (const auto& [k, v] : fields) {
    if (k == key) return &v;
  }
  return nullptr;
}

double number_or(const StoredFields& fields, const char* key, double fallback) {
  const StoredValue* v = find(fields, key);
  if (v && std::holds_alternative<double>(*v)) return std::get<double>(*v);
  if (v && std::holds_alternative<int64_t>(*v)) return static_cast<double>(std::get<int64_t>(*v));
  return fallback;
}

// {'state': {i: {'step', 'exp_avg', 'exp_avg_sq'}}, 'param_groups': [decay, no decay]},
// positions as nanoGPT's configure_optimizers numbers them.
void optimizer_dict(PickleWriter& w, const GPTImpl& model, const NanoGPTRun& run,
                    const torch::optim::AdamW* optimizer) {
  const auto groups = nanogpt_param_groups(model.config);
  const auto params = model.named_unique_parameters();
  // The library's group options and state, by parameter name.
  std::map<std::string, const torch::optim::AdamWOptions*> options;
  if (optimizer) {
    for (const auto& g : optimizer->param_groups()) {
      for (const auto& p : g.params()) {
        for (const auto& item : params) {
          if (item.value().unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) {
            options[item.key()] = &static_cast<const torch::optim::AdamWOptions&>(g.options());
          }
        }
      }
    }
  }
  w.begin_dict();
  w.string("state");
  w.begin_dict();
  int64_t id = 0;
  for (const auto& names : groups) {
    for (const auto& name : names) {
      const auto s = optimizer ? optimizer->state().find(compat::optimizer_state_key(params[name]))
                               : decltype(optimizer->state().end())();
      if (optimizer && s != optimizer->state().end()) {
        const auto& st = static_cast<const torch::optim::AdamWParamState&>(*s->second);
        w.integer(id);
        w.begin_dict();
        w.string("step");
        w.tensor(torch::tensor(static_cast<float>(st.step())));
        w.string("exp_avg");
        w.tensor(st.exp_avg());
        w.string("exp_avg_sq");
        w.tensor(st.exp_avg_sq());
        w.end_dict();
      }
      ++id;
    }
  }
  w.end_dict();
  w.string("param_groups");
  w.begin_list();
  id = 0;
  for (size_t g = 0; g < 2; ++g) {
    const torch::optim::AdamWOptions* o =
        groups[g].empty() || !options.count(groups[g][0]) ? nullptr : options[groups[g][0]];
    const double wd = g == 1 ? 0.0 : number_or(run.config, "weight_decay", 0.1);
    w.begin_dict();
    w.string("weight_decay"), w.real(o ? o->weight_decay() : wd);
    w.string("lr"), w.real(o ? o->lr() : number_or(run.config, "learning_rate", 6e-4));
    w.string("betas");
    w.begin_tuple();
    w.real(o ? std::get<0>(o->betas()) : number_or(run.config, "beta1", 0.9));
    w.real(o ? std::get<1>(o->betas()) : number_or(run.config, "beta2", 0.95));
    w.end_tuple();
    w.string("eps"), w.real(o ? o->eps() : 1e-8);
    w.string("amsgrad"), w.boolean(false);
    w.string("foreach"), w.none();
    w.string("maximize"), w.boolean(false);
    w.string("capturable"), w.boolean(false);
    w.string("differentiable"), w.boolean(false);
    w.string("fused"), w.none();
    w.string("params");
    w.begin_list();
    for (size_t j = 0; j < groups[g].size(); ++j) w.integer(id++);
    w.end_list();
    w.end_dict();
  }
  w.end_list();
  w.end_dict();
}

}  // namespace

std::vector<std::string> save_nanogpt(const std::string& path, const GPTImpl& model,
                                      const NanoGPTRun& run, const torch::optim::AdamW* optimizer) {
  std::vector<std::string> notes;
  if (model.config.gelu() != Gelu::kExact) {
    notes.push_back(
        fmt::format("'{}': nanoGPT's MLP uses the exact GELU, this model the tanh "
                    "approximation: nanoGPT's logits will differ slightly",
                    path));
  }
  if (optimizer) {
    for (const auto& g : optimizer->param_groups()) {
      if (static_cast<const torch::optim::AdamWOptions&>(g.options()).amsgrad()) {
        throw InputError("nanoGPT's AdamW does not use amsgrad; this optimizer does");
      }
    }
  }
  const GPTConfig& c = model.config;
  PickleWriter w;
  w.begin_dict();
  w.string("model");
  w.begin_ordered_dict();
  const auto params = model.named_parameters();
  std::vector<std::string> names;  // nanoGPT's state_dict order
  for (const auto& item : params) names.push_back(item.key());
  std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return (a == "lm_head.weight") < (b == "lm_head.weight");  // nanoGPT registers lm_head last
  });
  torch::NoGradGuard no_grad;
  for (const auto& name : names) {
    w.string(name);
    w.tensor(params[name].detach(), fmt::format("{} of nanoGPT checkpoint '{}'", name, path));
  }
  w.end_dict();
  w.string("optimizer");
  optimizer_dict(w, model, run, optimizer);
  w.string("model_args");
  w.begin_dict();
  w.string("n_layer"), w.integer(c.n_layer());
  w.string("n_head"), w.integer(c.n_head());
  w.string("n_embd"), w.integer(c.n_embd());
  w.string("block_size"), w.integer(c.block_size());
  w.string("bias"), w.boolean(c.bias());
  w.string("vocab_size"), w.integer(c.vocab_size());
  w.string("dropout"), w.real(c.dropout());
  w.end_dict();
  w.string("iter_num"), w.integer(run.iter_num);
  w.string("best_val_loss"), w.tensor(torch::tensor(static_cast<float>(run.best_val_loss)));
  w.string("config");
  w.begin_dict();
  for (const auto& [key, v] : run.config) w.string(key), value(w, v);
  w.end_dict();
  w.end_dict();
  const std::string pickle = w.finish();
  write_atomically(path, [&](std::ostream& out) {
    caffe2::serialize::PyTorchStreamWriter zip([&](const void* data, size_t size) -> size_t {
      out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
      return out ? size : 0;
    });
    zip.writeRecord("data.pkl", pickle.data(), pickle.size());
    for (const auto& [key, t] : w.storages()) {
      const std::string_view bytes = detail::host_bytes(t);
      zip.writeRecord("data/" + key, bytes.data(), bytes.size());
    }
    zip.writeEndOfFile();
  });
  return notes;
}

}  // namespace gpt2
