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

struct Parsed {
  torch::jit::Module archive;
  torch::jit::Module meta;
  GPTConfig config;
};

Parsed parse(const std::string& path) {
  Parsed p;
  try {
    p.archive = torch::jit::load(path, torch::Device(torch::kCPU));
  } catch (const c10::Error& e) {
    throw FileError(fmt::format("cannot read checkpoint '{}': {}", path, e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw FileError(fmt::format("cannot read checkpoint '{}': {}", path, e.what()));
  }
  try {
    if (!p.archive.hasattr("gpt2")) throw std::runtime_error("it has no gpt2 metadata");
    p.meta = p.archive.attr("gpt2").toModule();
    const int64_t version = p.meta.attr("format_version").toInt();
    if (version != kFormatVersion) {
      throw std::runtime_error(fmt::format("format version {}, this library reads {}", version,
                                           kFormatVersion));
    }
    InitOptions init;
    init.std(p.meta.attr("init_std").toDouble())
        .wpe_std(p.meta.attr("init_wpe_std").toDouble())
        .residual(residual_scale_from_string(p.meta.attr("init_residual").toStringRef()));
    if (p.meta.attr("init_has_seed").toBool()) {
      init.seed(static_cast<uint64_t>(p.meta.attr("init_seed").toInt()));
    }
    p.config.block_size(p.meta.attr("block_size").toInt())
        .vocab_size(p.meta.attr("vocab_size").toInt())
        .n_layer(p.meta.attr("n_layer").toInt())
        .n_head(p.meta.attr("n_head").toInt())
        .n_embd(p.meta.attr("n_embd").toInt())
        .bias(p.meta.attr("bias").toBool())
        .dropout(p.meta.attr("dropout").toDouble())
        .gelu(gelu_from_string(p.meta.attr("gelu").toStringRef()))
        .init(init);
    p.config.validate();
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
  std::map<std::string, torch::Tensor> stored;
  for (const auto& item : p.archive.named_parameters(/*recurse=*/true)) stored[item.name] = item.value;
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
  std::map<std::string, torch::Tensor> stored;
  for (const auto& item : p.archive.named_parameters(/*recurse=*/true)) stored[item.name] = item.value;
  torch::NoGradGuard no_grad;
  for (const auto& item : model.named_unique_parameters()) {
    item.value().copy_(stored.at(item.key()));
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
  c.model = GPT(p.config);
  load_parsed(p, path, *c.model);
  c.step = p.meta.attr("step").toInt();
  if (p.meta.hasattr("rng_state")) c.rng_state = p.meta.attr("rng_state").toTensor();
  c.has_optimizer_state = p.meta.hasattr("optimizer_state");
  return c;
}

void load_optimizer_state(const std::string& path, torch::optim::Optimizer& optimizer) {
  const Parsed p = parse(path);
  if (!p.meta.hasattr("optimizer_state")) {
    throw CheckpointError(fmt::format("checkpoint '{}' holds no optimizer state", path));
  }
  const torch::Tensor bytes = p.meta.attr("optimizer_state").toTensor();
  std::istringstream stream(std::string(static_cast<const char*>(bytes.data_ptr()),
                                        static_cast<size_t>(bytes.numel())));
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(stream);
    optimizer.load(archive);
  } catch (const c10::Error& e) {
    throw CheckpointError(fmt::format("cannot restore the optimizer from '{}': {}", path,
                                      e.what_without_backtrace()));
  }
}

}  // namespace gpt2
