#include "gpt2/io/checkpoint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstring>
#include <map>
#include <ostream>
#include <optional>
#include <sstream>
#include <vector>

#include "gpt2/io/atomic_file.h"
#include "gpt2/io/checksum.h"
#include "gpt2/io/detail/checkpoint_fields.h"
#include "gpt2/io/state_dict.h"
#include "gpt2/error.h"

namespace gpt2 {
namespace {

// Bump when the layout of the "gpt2" metadata changes.
constexpr int64_t kFormatVersion = 1;

void write_meta(torch::serialize::OutputArchive& meta, const GPTImpl& model,
                const TrainingState& state) {
  meta.write("format_version", kFormatVersion);
  // Added in format 1 without a version bump: files without it still load.
  c10::Dict<std::string, int64_t> crcs;
  for (const auto& item : model.named_parameters()) crcs.insert(item.key(), tensor_crc32(item.value()));
  meta.write("tensor_crc32", c10::IValue(crcs));
  detail::write_config(meta, model.config);
  meta.write("step", state.step);
  if (state.rng_state.defined()) meta.write("rng_state", c10::IValue(state.rng_state));
  if (!state.extra.empty()) meta.write("extra", c10::IValue(state.extra));
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
  std::string extra;
  StateDict tensors;  // by nanoGPT name
  std::vector<std::string> problems;  // checksum mismatches
  std::vector<std::string> notes;
};

// The stored CRC-32s, or nullopt for a file written before they were.
std::optional<std::map<std::string, int64_t>> stored_checksums(const torch::jit::Module& meta) {
  if (!meta.hasattr("tensor_crc32")) return std::nullopt;
  const c10::IValue v = meta.attr("tensor_crc32");
  if (!v.isGenericDict()) throw std::runtime_error("its tensor_crc32 field is not a dict");
  std::map<std::string, int64_t> out;
  for (const auto& entry : v.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isInt()) {
      throw std::runtime_error("its tensor_crc32 field is not a str -> int dict");
    }
    out[entry.key().toStringRef()] = entry.value().toInt();
  }
  return out;
}

// Reads the checkpoint `path` names, from `in` when given (else the file).
Parsed parse(const std::string& path, std::istream* in = nullptr) {
  Parsed p;
  require_regular_file(path);
  torch::jit::Module archive;
  try {
    archive = in ? torch::jit::load(*in, torch::Device(torch::kCPU))
                 : torch::jit::load(path, torch::Device(torch::kCPU));
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
    p.config = detail::read_config(meta);
    p.config.validate();
    check_fits_in_memory(p.config);  // before anything is built from it
    p.step = meta.attr("step").toInt();
    if (meta.hasattr("rng_state")) p.rng_state = meta.attr("rng_state").toTensor();
    if (meta.hasattr("extra")) p.extra = meta.attr("extra").toStringRef();
    if (meta.hasattr("optimizer_state")) {
      p.optimizer_state = meta.attr("optimizer_state").toTensor();
      if (p.optimizer_state.scalar_type() != torch::kUInt8 || p.optimizer_state.dim() != 1) {
        throw std::runtime_error("its optimizer state is not a 1-D uint8 tensor");
      }
    }
    for (const auto& item : archive.named_parameters(/*recurse=*/true)) {
      p.tensors[item.name] = item.value;
    }
    if (const auto stored = stored_checksums(meta)) {
      p.problems = checksum_problems(p.tensors, *stored);
    } else {
      p.notes.push_back(fmt::format("'{}' has no tensor checksums (written before gpt2 stored "
                                    "them): its tensor data is not verified", path));
    }
  } catch (const std::exception& e) {
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    throw FileError(fmt::format("'{}' is not a gpt2 checkpoint: {}", path,
                                c10_error ? c10_error->what_without_backtrace() : e.what()));
  }
  return p;
}

// Config fields whose difference makes the file's weights unusable in `model`.
std::vector<std::string> config_problems(const GPTConfig& file, const GPTConfig& model) {
  std::vector<std::string> out;
  const auto ours = field_texts(model);
  const auto theirs = field_texts(file);
  for (size_t i = 0; i < ours.size(); ++i) {
    const auto& [field, value] = ours[i];
    if (field.architecture && theirs[i].second != value) {
      out.push_back(fmt::format("config {} differs: checkpoint {}, model {}", field.key,
                                theirs[i].second, value));
    }
  }
  return out;
}

// The first Adam/AdamW moment whose shape differs from its parameter's,
// described; empty when all fit. LibTorch 1.13's Optimizer::load matches
// state to parameters by position only.
std::string moment_shape_problem(torch::optim::Optimizer& optimizer) {
  auto& state = optimizer.state();
  const auto& groups = optimizer.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& params = groups[g].params();
    for (size_t i = 0; i < params.size(); ++i) {
      auto it = state.find(c10::guts::to_string(params[i].unsafeGetTensorImpl()));
      if (it == state.end()) continue;
      torch::Tensor moment;
      if (auto* s = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
        moment = s->exp_avg();
      } else if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(it->second.get())) {
        moment = a->exp_avg();
      }
      if (moment.defined() && moment.sizes() != params[i].sizes()) {
        return fmt::format("group {} parameter {} has shape {} but its stored moment has {}", g, i,
                           fmt::join(params[i].sizes(), "x"), fmt::join(moment.sizes(), "x"));
      }
    }
  }
  return {};
}

void load_parsed(const Parsed& p, const std::string& path, GPTImpl& model) {
  auto problems = p.problems;
  for (auto& problem : config_problems(p.config, model.config)) problems.push_back(std::move(problem));
  load_state_dict(p.tensors, model, path, std::move(problems));
}

}  // namespace

void save_checkpoint(const std::string& path, const GPTImpl& model, const TrainingState& state) {
  write_atomically(path, [&](std::ostream& out) {
    torch::serialize::OutputArchive archive;
    model.save(archive);
    torch::serialize::OutputArchive meta;
    write_meta(meta, model, state);
    archive.write("gpt2", meta);
    archive.save_to(out);
  });
}

GPTConfig read_checkpoint_config(const std::string& path) { return parse(path).config; }

void load_weights(const std::string& path, GPTImpl& model) {
  load_parsed(parse(path), path, model);
}

Checkpoint load_checkpoint(const std::string& path) { return detail::load_checkpoint(path, nullptr); }

namespace detail {
Checkpoint load_checkpoint(const std::string& path, std::istream* in) {
  const Parsed p = parse(path, in);
  Checkpoint c;
  c.model = GPT(GPTImpl::uninitialized(p.config));
  // The model takes the stored dtype (a float64 run saves float64).
  auto wte = p.tensors.find("transformer.wte.weight");
  if (wte != p.tensors.end()) c.model->to(wte->second.scalar_type());
  load_parsed(p, path, *c.model);
  c.step = p.step;
  c.rng_state = p.rng_state;
  c.has_optimizer_state = p.optimizer_state.defined();
  c.extra = p.extra;
  c.notes = p.notes;
  return c;
}
}  // namespace detail

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
  const std::string problem = moment_shape_problem(optimizer);
  if (!problem.empty()) {
    auto archive = as_input(backup.str());
    optimizer.load(archive);
    throw CheckpointError(fmt::format("cannot restore the optimizer from '{}': {}", path, problem));
  }
}

}  // namespace gpt2
