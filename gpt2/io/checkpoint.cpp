#include "gpt2/io/checkpoint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/serialize/output-archive.h>

#include <cstring>
#include <map>
#include <ostream>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "gpt2/fields/table.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/file/read_file.h"
#include "gpt2/io/checksum.h"
#include "gpt2/io/checkpoint/checkpoint_fields.h"
#include "gpt2/io/checkpoint/optimizer_state.h"
#include "gpt2/io/checkpoint/torch_archive.h"
#include "gpt2/io/detail/host_tensor.h"
#include "gpt2/io/detail/mapped_tensor.h"
#include "gpt2/io/model_source.h"
#include "gpt2/io/state_dict.h"
#include "gpt2/error.h"

namespace gpt2 {
namespace {

// Bump when the layout of the "gpt2" metadata changes.
constexpr int64_t kFormatVersion = 1;

// `model` is on the CPU (HostModel).
void write_meta(torch::serialize::OutputArchive& meta, const GPTImpl& model,
                const TrainingState& state, const std::string& path) {
  meta.write("format_version", kFormatVersion);
  // Added in format 1 without a version bump: files without it still load.
  c10::Dict<std::string, int64_t> crcs;
  for (const auto& item : model.named_parameters()) {
    crcs.insert(item.key(), tensor_crc32(item.value(), item.key()));
  }
  meta.write("tensor_crc32", c10::IValue(crcs));
  detail::write_fields(meta, stored_fields(model.config));
  meta.write("step", state.step);
  if (state.rng_state.defined()) {
    meta.write("rng_state", c10::IValue(detail::host_tensor(
                                state.rng_state, fmt::format("the rng state of checkpoint '{}'", path))));
  }
  if (!state.extra.empty()) meta.write("extra", c10::IValue(state.extra));
  // Added in format 1 without a version bump: older trainers kept their options in `extra`.
  if (!state.train_options.empty()) detail::write_module(meta, "train_options", state.train_options);
  if (state.optimizer) {
    // Stored as bytes in an attribute, not as parameters, so that the
    // archive's state_dict() holds the model's names only.
    const std::string data = detail::optimizer_bytes(*state.optimizer, path);
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
  std::string extra;
  StoredFields train_options;
  StateDict tensors;  // by nanoGPT name
  std::vector<std::string> problems;  // checksum mismatches
  std::vector<std::string> notes;
  std::vector<std::string> nonfinite;
};

std::string_view optimizer_bytes(const Parsed& p) {
  return {static_cast<const char*>(p.optimizer_state.data_ptr()),
          static_cast<size_t>(p.optimizer_state.numel())};
}

using detail::PValue;

using detail::meta_field;

// The stored CRC-32s, or nullopt for a file written before they were.
std::optional<std::map<std::string, int64_t>> stored_checksums(const PValue& meta) {
  const PValue* v = meta_field(meta, "tensor_crc32", PValue::Kind::kDict);
  if (!v) return std::nullopt;
  std::map<std::string, int64_t> out;
  for (const auto& [key, value] : v->entries) {
    if (value->kind != PValue::Kind::kInt) throw std::runtime_error("its tensor_crc32 is not str -> int");
    out[key] = value->i;
  }
  return out;
}

// float16 / bfloat16 tensors become float32 (LibTorch 1.13's CPU LayerNorm
// has no half kernel), with a note; after the checksums, which cover the
// stored bytes.
void widen_half(Parsed& p, const std::string& path) {
  std::string from;
  for (auto& [name, t] : p.tensors) {
    if (t.scalar_type() == torch::kHalf || t.scalar_type() == torch::kBFloat16) {
      from = c10::toString(t.scalar_type());
      t = t.to(torch::kFloat);
    }
  }
  if (!from.empty()) {
    p.notes.push_back(fmt::format("'{}' stores {} weights: converted to float32 at load", path, from));
  }
}

// Reads the checkpoint `path` names from its `bytes`, every byte checked by
// the archive gate first; torch::jit::load never sees them. Where `file`
// (whose bytes `bytes` are) allows views, the tensors view its bytes.
Parsed parse(const std::string& path, std::string_view bytes,
             detail::ModelFileBytes file = {}) {
  Parsed p;
  std::optional<detail::TorchArchive> archive;
  try {
    archive.emplace(bytes, path, std::move(file));
  } catch (const FormatError& e) {
    throw FormatError(fmt::format("cannot read checkpoint: {}", e.what()));
  }
  try {
    const PValue* meta = meta_field(archive->root(), "gpt2", PValue::Kind::kObject);
    if (!meta) throw std::runtime_error("it has no gpt2 metadata");
    const PValue* version = meta_field(*meta, "format_version", PValue::Kind::kInt);
    if (!version) throw std::runtime_error("it has no format_version field");
    if (version->i != kFormatVersion) {
      throw std::runtime_error(fmt::format("format version {}, this library reads {}", version->i,
                                           kFormatVersion));
    }
    load_fields(p.config, detail::read_fields(*meta));
    p.config.validate();
    check_fits_in_memory(p.config);  // before anything is built from it
    const PValue* step = meta_field(*meta, "step", PValue::Kind::kInt);
    if (!step) throw std::runtime_error("it has no step field");
    p.step = step->i;
    for (const char* key : {"rng_state", "optimizer_state"}) {
      const PValue* t = meta_field(*meta, key, PValue::Kind::kTensor);
      if (t && archive->damaged(*t->tensor)) {
        throw std::runtime_error(fmt::format("its {} fails its CRC-32", key));
      }
    }
    if (const auto* rng = meta_field(*meta, "rng_state", PValue::Kind::kTensor)) {
      p.rng_state = archive->tensor(*rng->tensor).clone();
    }
    if (const auto* extra = meta_field(*meta, "extra", PValue::Kind::kString)) p.extra = extra->s;
    if (const auto* options = meta_field(*meta, "train_options", PValue::Kind::kObject)) {
      p.train_options = detail::read_fields(*options);
    }
    if (const auto* opt = meta_field(*meta, "optimizer_state", PValue::Kind::kTensor)) {
      p.optimizer_state = archive->tensor(*opt->tensor).contiguous();
      if (p.optimizer_state.scalar_type() != torch::kUInt8 || p.optimizer_state.dim() != 1) {
        throw std::runtime_error("its optimizer state is not a 1-D uint8 tensor");
      }
      // The one archive LibTorch will read (Optimizer::load): through the gate first.
      detail::TorchArchive(optimizer_bytes(p), path + " (its optimizer state)");
    }
    const auto stored = stored_checksums(*meta);
    std::map<std::string, uint32_t> taken;  // CRC-32s the read already took
    for (const auto& [name, t] : archive->named_parameters()) {
      p.tensors[name] = archive->tensor(*t);
      if (!stored && archive->damaged(*t)) {
        p.problems.push_back(fmt::format("checksum mismatch for {}: its zip record data/{} fails "
                                         "its CRC-32", name, t->storage_key));
      }
      if (const auto crc = archive->bytes_crc32(*t)) taken[name] = *crc;
    }
    if (stored) {
      p.problems = checksum_problems(p.tensors, *stored, taken);
    } else {
      p.notes.push_back(fmt::format("'{}' has no tensor checksums (written before gpt2 stored "
                                    "them): its tensor data is verified by the zip CRC-32s only", path));
    }
  } catch (const FormatError&) {
    throw;
  } catch (const std::exception& e) {
    throw FileError(fmt::format("'{}' is not a gpt2 checkpoint: {}", path, e.what()));
  }
  widen_half(p, path);
  p.nonfinite = nonfinite_report(p.tensors);
  for (auto& note : p.nonfinite) p.notes.push_back(fmt::format("'{}': {}", path, note));
  return p;
}

Parsed parse(const std::string& path, const LoadOptions& options = {}) {
  require_regular_file(path);
  detail::ModelFileBytes file = detail::model_file_bytes(path, options.mmap());
  const std::string_view bytes = file.bytes;
  return parse(path, bytes, std::move(file));
}

// Config fields whose difference makes the file's weights unusable in `model`.
std::vector<std::string> config_problems(const GPTConfig& file, const GPTConfig& model) {
  std::vector<std::string> out;
  for (const auto& d : field_differences(file, model)) {
    if (d.field.architecture) {
      out.push_back(fmt::format("config {} differs: checkpoint {}, model {}", d.field.key, d.first,
                                d.second));
    }
  }
  return out;
}

void load_parsed(const Parsed& p, const std::string& path, GPTImpl& model,
                 LoadMode mode = LoadMode::kCopy) {
  auto problems = p.problems;
  for (auto& problem : config_problems(p.config, model.config)) problems.push_back(std::move(problem));
  load_state_dict(p.tensors, model, path, std::move(problems), mode);
}

Checkpoint from_parsed(const Parsed& p, const std::string& path) {
  // Nothing is built for a config the file's tensors cannot fill.
  int64_t stored = 0;
  for (const auto& [name, t] : p.tensors) stored += name == "lm_head.weight" ? 0 : t.numel();
  if (stored != p.config.num_parameters()) {
    throw_load_problems(path, {fmt::format("its tensors hold {} values, but its config ({}) "
                                           "implies {}", stored, to_string(p.config),
                                           p.config.num_parameters())});
  }
  Checkpoint c(GPT(GPTImpl::uninitialized(p.config)));
  // The model takes the stored dtype (a float64 run saves float64).
  auto wte = p.tensors.find("transformer.wte.weight");
  if (wte != p.tensors.end()) c.model->to(wte->second.scalar_type());
  // The parsed storages were read for this model alone (the archive's
  // buffers, freed with `p`): the model takes them over.
  load_parsed(p, path, *c.model, LoadMode::kAdopt);
  c.step = p.step;
  c.rng_state = p.rng_state;
  c.has_optimizer_state = p.optimizer_state.defined();
  c.extra = p.extra;
  c.train_options = p.train_options;
  c.notes = p.notes;
  c.nonfinite = p.nonfinite;
  return c;
}

}  // namespace

void save_checkpoint(const std::string& path, const GPTImpl& model, const TrainingState& state) {
  // The file holds CPU tensors wherever the model runs, so that it loads
  // on any machine: a GPU's model is written from a CPU copy.
  const detail::HostModel host(model, fmt::format("checkpoint '{}'", path));
  write_atomically(path, [&](std::ostream& out) {
    torch::serialize::OutputArchive archive;
    host->save(archive);
    torch::serialize::OutputArchive meta;
    write_meta(meta, *host, state, path);
    archive.write("gpt2", meta);
    archive.save_to(out);
  });
}

GPTConfig read_checkpoint_config(const std::string& path) { return parse(path).config; }

StateDict read_checkpoint_tensors(const std::string& path) {
  Parsed p = parse(path);
  if (!p.problems.empty()) throw_load_problems(path, p.problems);
  return p.tensors;
}

void load_weights(const std::string& path, GPTImpl& model) {
  load_parsed(parse(path), path, model);
}

Checkpoint::Checkpoint(GPT model) : model(std::move(model)) {
  if (this->model.is_empty()) throw Error("a Checkpoint needs a model; it was given GPT{nullptr}");
}

Checkpoint load_checkpoint(const std::string& path, const LoadOptions& options) {
  return from_parsed(parse(path, options), path);
}

Checkpoint load_checkpoint_bytes(std::string_view bytes, const std::string& name) {
  return from_parsed(parse(name, bytes), name);
}

void load_optimizer_state(const std::string& path, torch::optim::Optimizer& optimizer) {
  const Parsed p = parse(path);
  if (!p.optimizer_state.defined()) {
    throw CheckpointError(fmt::format("checkpoint '{}' holds no optimizer state", path));
  }
  detail::restore_optimizer(optimizer_bytes(p), path, optimizer);
}

}  // namespace gpt2
