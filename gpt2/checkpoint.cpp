#include "gpt2/checkpoint.h"

#include <fmt/format.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstring>
#include <map>
#include <sstream>
#include <vector>

#include "gpt2/atomic_file.h"
#include "gpt2/error.h"

namespace gpt2 {
namespace {

// Bump when the layout of the "gpt2" metadata changes.
constexpr int64_t kFormatVersion = 1;

std::string shape_of(const torch::Tensor& t) {
  return fmt::format("[{}]", fmt::join(t.sizes(), ", "));
}

void write_meta(torch::serialize::OutputArchive& meta, const GPTConfig& c,
                const TrainingState& state) {
  meta.write("format_version", kFormatVersion);
  meta.write("block_size", c.block_size());
  meta.write("vocab_size", c.vocab_size());
  meta.write("n_layer", c.n_layer());
  meta.write("n_head", c.n_head());
  meta.write("n_embd", c.n_embd());
  meta.write("bias", c.bias());
  meta.write("dropout", c.dropout());
  meta.write("gelu", to_string(c.gelu()));
  meta.write("init_std", c.init().std());
  meta.write("init_wpe_std", c.init().wpe_std());
  meta.write("init_residual", to_string(c.init().residual()));
  // Seeds are uint64; stored as int64 with their bits kept.
  meta.write("init_has_seed", c.init().seed().has_value());
  meta.write("init_seed", static_cast<int64_t>(c.init().seed().value_or(0)));
  meta.write("step", state.step);
  if (state.rng_state.defined()) meta.write("rng_state", c10::IValue(state.rng_state));
  if (state.optimizer) {
    // Stored as bytes in an attribute, not as parameters, so that the
    // archive's state_dict() holds the model's names only.
    torch::serialize::OutputArchive archive;
    state.optimizer->save(archive);
    std::ostringstream bytes;
    archive.save_to(bytes);
    const std::string data = bytes.str();
    auto tensor = torch::empty({static_cast<int64_t>(data.size())}, torch::kUInt8);
    std::memcpy(tensor.data_ptr(), data.data(), data.size());
    meta.write("optimizer_state", c10::IValue(tensor));
  }
}

// Everything read from a checkpoint file, checked for type.
struct Parsed {
  GPTConfig config;
  int64_t step = 0;
  torch::Tensor rng_state;        // undefined when none was saved
  torch::Tensor optimizer_state;  // uint8 archive bytes; undefined when none
  std::map<std::string, torch::Tensor> tensors;  // by nanoGPT name
};

Parsed parse(const std::string& path) {
  Parsed p;
  torch::jit::Module archive;
  try {
    archive = torch::jit::load(path, torch::Device(torch::kCPU));
  } catch (const c10::Error& e) {
    throw FileError(fmt::format("cannot read checkpoint '{}': {}", path, e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw FileError(fmt::format("cannot read checkpoint '{}': {}", path, e.what()));
  }
  try {
    if (!archive.hasattr("gpt2")) throw std::runtime_error("it has no gpt2 metadata");
    const torch::jit::Module meta = archive.attr("gpt2").toModule();
    const int64_t version = meta.attr("format_version").toInt();
    if (version != kFormatVersion) {
      throw std::runtime_error(fmt::format("format version {}, this library reads {}", version,
                                           kFormatVersion));
    }
    InitOptions init;
    init.std(meta.attr("init_std").toDouble())
        .wpe_std(meta.attr("init_wpe_std").toDouble())
        .residual(residual_scale_from_string(meta.attr("init_residual").toStringRef()));
    if (meta.attr("init_has_seed").toBool()) {
      init.seed(static_cast<uint64_t>(meta.attr("init_seed").toInt()));
    }
    p.config.block_size(meta.attr("block_size").toInt())
        .vocab_size(meta.attr("vocab_size").toInt())
        .n_layer(meta.attr("n_layer").toInt())
        .n_head(meta.attr("n_head").toInt())
        .n_embd(meta.attr("n_embd").toInt())
        .bias(meta.attr("bias").toBool())
        .dropout(meta.attr("dropout").toDouble())
        .gelu(gelu_from_string(meta.attr("gelu").toStringRef()))
        .init(init);
    p.config.validate();
    p.step = meta.attr("step").toInt();
    if (meta.hasattr("rng_state")) p.rng_state = meta.attr("rng_state").toTensor();
    if (meta.hasattr("optimizer_state")) {
      p.optimizer_state = meta.attr("optimizer_state").toTensor();
      if (p.optimizer_state.scalar_type() != torch::kUInt8 || p.optimizer_state.dim() != 1) {
        throw std::runtime_error("its optimizer state is not a 1-D uint8 tensor");
      }
    }
    for (const auto& item : archive.named_parameters(/*recurse=*/true)) {
      p.tensors[item.name] = item.value;
    }
  } catch (const std::exception& e) {
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    throw FileError(fmt::format("'{}' is not a gpt2 checkpoint: {}", path,
                                c10_error ? c10_error->what_without_backtrace() : e.what()));
  }
  return p;
}

// Every reason the archive's tensors cannot be loaded into `model`.
std::vector<std::string> problems(const Parsed& p, const GPTImpl& model) {
  std::vector<std::string> out;
  const GPTConfig& f = p.config;
  const GPTConfig& m = model.config;
  auto field = [&out](const char* name, const std::string& file, const std::string& ours) {
    if (file != ours) {
      out.push_back(fmt::format("config {} differs: checkpoint {}, model {}", name, file, ours));
    }
  };
  using std::to_string;
  field("block_size", to_string(f.block_size()), to_string(m.block_size()));
  field("vocab_size", to_string(f.vocab_size()), to_string(m.vocab_size()));
  field("n_layer", to_string(f.n_layer()), to_string(m.n_layer()));
  field("n_head", to_string(f.n_head()), to_string(m.n_head()));
  field("n_embd", to_string(f.n_embd()), to_string(m.n_embd()));
  field("bias", to_string(f.bias()), to_string(m.bias()));
  field("gelu", gpt2::to_string(f.gelu()), gpt2::to_string(m.gelu()));
  const auto& stored = p.tensors;
  const auto expected = model.named_parameters();
  for (const auto& item : expected) {
    auto found = stored.find(item.key());
    if (found == stored.end()) {
      out.push_back(fmt::format("missing {}", item.key()));
    } else if (!found->second.sizes().equals(item.value().sizes())) {
      out.push_back(fmt::format("size mismatch for {}: checkpoint {}, model {}", item.key(),
                                shape_of(found->second), shape_of(item.value())));
    } else if (found->second.scalar_type() != item.value().scalar_type()) {
      out.push_back(fmt::format("dtype mismatch for {}: checkpoint {}, model {}", item.key(),
                                c10::toString(found->second.scalar_type()),
                                c10::toString(item.value().scalar_type())));
    }
  }
  for (const auto& [name, tensor] : stored) {
    if (!expected.contains(name)) out.push_back(fmt::format("unexpected {}", name));
  }
  auto head = stored.find("lm_head.weight"), wte = stored.find("transformer.wte.weight");
  if (out.empty() && head != stored.end() && wte != stored.end() &&
      head->second.data_ptr() != wte->second.data_ptr() && !torch::equal(head->second, wte->second)) {
    out.push_back("lm_head.weight and transformer.wte.weight differ, but this model ties them");
  }
  return out;
}

void load_parsed(const Parsed& p, const std::string& path, GPTImpl& model) {
  const auto found = problems(p, model);
  if (!found.empty()) {
    throw CheckpointError(fmt::format("cannot load '{}' into the model ({} problem{}):\n  {}", path,
                                      found.size(), found.size() == 1 ? "" : "s",
                                      fmt::join(found, "\n  ")));
  }
  torch::NoGradGuard no_grad;
  for (const auto& item : model.named_unique_parameters()) {
    item.value().copy_(p.tensors.at(item.key()));
  }
}

}  // namespace

void save_checkpoint(const std::string& path, const GPTImpl& model, const TrainingState& state) {
  write_atomically(path, [&](const std::string& tmp) {
    torch::serialize::OutputArchive archive;
    model.save(archive);
    torch::serialize::OutputArchive meta;
    write_meta(meta, model.config, state);
    archive.write("gpt2", meta);
    archive.save_to(tmp);
  });
}

GPTConfig read_checkpoint_config(const std::string& path) { return parse(path).config; }

void load_weights(const std::string& path, GPTImpl& model) {
  load_parsed(parse(path), path, model);
}

Checkpoint load_checkpoint(const std::string& path) {
  const Parsed p = parse(path);
  Checkpoint c;
  c.model = GPT(GPTImpl::uninitialized(p.config));
  // The model takes the stored dtype (a float64 run saves float64).
  auto wte = p.tensors.find("transformer.wte.weight");
  if (wte != p.tensors.end()) c.model->to(wte->second.scalar_type());
  load_parsed(p, path, *c.model);
  c.step = p.step;
  c.rng_state = p.rng_state;
  c.has_optimizer_state = p.optimizer_state.defined();
  return c;
}

void load_optimizer_state(const std::string& path, torch::optim::Optimizer& optimizer) {
  const Parsed p = parse(path);
  if (!p.optimizer_state.defined()) {
    throw CheckpointError(fmt::format("checkpoint '{}' holds no optimizer state", path));
  }
  auto as_input = [](const std::string& bytes) {
    std::istringstream stream(bytes);
    torch::serialize::InputArchive archive;
    archive.load_from(stream);
    return archive;
  };
  // Optimizer::load fills state group by group; keep a copy to put back if
  // a later group does not fit.
  std::ostringstream backup;
  {
    torch::serialize::OutputArchive archive;
    optimizer.save(archive);
    archive.save_to(backup);
  }
  try {
    auto archive = as_input(std::string(static_cast<const char*>(p.optimizer_state.data_ptr()),
                                        static_cast<size_t>(p.optimizer_state.numel())));
    optimizer.load(archive);
  } catch (const c10::Error& e) {
    auto archive = as_input(backup.str());
    optimizer.load(archive);
    throw CheckpointError(fmt::format("cannot restore the optimizer from '{}': {}", path,
                                      e.what_without_backtrace()));
  }
}

}  // namespace gpt2
