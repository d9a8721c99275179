// Optimizer state: the archive Optimizer::save wrote, stored as bytes in a
// checkpoint and restored through LibTorch's InputArchive, the one place a
// checkpoint's bytes reach torch::jit::load. parse() has passed them
// through the archive gate (checkpoint/torch_archive.h) before they get here.
#include "gpt2/io/checkpoint/optimizer_state.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/io/checkpoint/checkpoint_fields.h"
#include "gpt2/io/detail/host_tensor.h"
#include "gpt2/ops/torch_compat.h"

namespace gpt2::detail {
namespace {

// The first Adam/AdamW moment whose shape differs from its parameter's,
// described; empty when all fit. LibTorch 1.13's Optimizer::load matches
// state to parameters by position only.
std::string moment_shape_problem(torch::optim::Optimizer& optimizer) {
  auto& state = optimizer.state();
  const auto& groups = optimizer.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& params = groups[g].params();
    for (size_t i = 0; i < params.size(); ++i) {
      auto it = state.find(compat::optimizer_state_key(params[i]));
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

// The moments of an Adam or AdamW parameter state (max_exp_avg_sq may be
// undefined); none for another optimizer's.
std::vector<torch::Tensor*> moments(torch::optim::OptimizerParamState& state) {
  if (auto* s = dynamic_cast<torch::optim::AdamWParamState*>(&state)) {
    return {&s->exp_avg(), &s->exp_avg_sq(), &s->max_exp_avg_sq()};
  }
  if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(&state)) {
    return {&a->exp_avg(), &a->exp_avg_sq(), &a->max_exp_avg_sq()};
  }
  return {};
}

// LibTorch 1.13 keys each parameter's state by its TensorImpl's address
// printed in hex ("0x55d0c8f0a1b0"); 2.x prints it in decimal and reads the
// keys back with std::stoull, which takes every hex key for 0. For such a
// LibTorch, an archive of 1.13 is written again with decimal keys (for the
// optimizers this library makes, Adam and AdamW) before it is loaded.
std::string decimal_key(const std::string& key) {
  return std::to_string(std::stoull(key, nullptr, 16));
}

bool has_hex_keys(torch::serialize::InputArchive& archive) {
  torch::serialize::InputArchive groups, group;
  c10::IValue first;
  return archive.try_read("param_groups", groups) && groups.try_read("param_groups/0", group) &&
         group.try_read("params/0", first) && first.isString() &&
         first.toStringRef().rfind("0x", 0) == 0;
}

template <typename State, typename Options>
std::string with_decimal_keys(torch::serialize::InputArchive& in) {
  torch::serialize::OutputArchive out;
  const auto unit = out.compilation_unit();
  out.write("pytorch_version", c10::IValue("1.5.0"));
  torch::serialize::InputArchive state_in;
  in.read("state", state_in);
  torch::serialize::OutputArchive state_out(unit);
  for (const std::string& key : state_in.keys()) {
    torch::serialize::InputArchive one_in;
    state_in.read(key, one_in);
    State state;
    state.serialize(one_in);
    torch::serialize::OutputArchive one_out(unit);
    state.serialize(one_out);
    state_out.write(decimal_key(key), one_out);
  }
  out.write("state", state_out);
  torch::serialize::InputArchive groups_in;
  in.read("param_groups", groups_in);
  torch::serialize::OutputArchive groups_out(unit);
  torch::Tensor groups;
  groups_in.read("param_groups/size", groups);
  groups_out.write("param_groups/size", groups);
  for (int64_t g = 0; g < groups.item<int64_t>(); ++g) {
    torch::serialize::InputArchive group_in, options_in;
    groups_in.read("param_groups/" + std::to_string(g), group_in);
    torch::serialize::OutputArchive group_out(unit), options_out(unit);
    torch::Tensor params;
    group_in.read("params/size", params);
    group_out.write("params/size", params);
    for (int64_t i = 0; i < params.item<int64_t>(); ++i) {
      c10::IValue key;
      group_in.read("params/" + std::to_string(i), key);
      group_out.write("params/" + std::to_string(i), c10::IValue(decimal_key(key.toStringRef())));
    }
    group_in.read("options", options_in);
    Options options(0);
    options.serialize(options_in);
    options.serialize(options_out);
    group_out.write("options", options_out);
    groups_out.write("param_groups/" + std::to_string(g), group_out);
  }
  out.write("param_groups", groups_out);
  std::ostringstream bytes;
  out.save_to(bytes);
  return bytes.str();
}

// `bytes` as this LibTorch's Optimizer::load reads them.
std::string for_this_libtorch(const std::string& bytes, const std::string& path,
                              torch::optim::Optimizer& optimizer) {
  if constexpr (std::is_same_v<compat::OptimizerStateKey, std::string>) return bytes;
  std::istringstream stream(bytes);
  torch::serialize::InputArchive archive;
  archive.load_from(stream);
  if (!has_hex_keys(archive)) return bytes;
  if (dynamic_cast<torch::optim::AdamW*>(&optimizer)) {
    return with_decimal_keys<torch::optim::AdamWParamState, torch::optim::AdamWOptions>(archive);
  }
  if (dynamic_cast<torch::optim::Adam*>(&optimizer)) {
    return with_decimal_keys<torch::optim::AdamParamState, torch::optim::AdamOptions>(archive);
  }
  throw CheckpointError(fmt::format("cannot restore the optimizer from '{}': its state was written "
                                    "by LibTorch 1.13, which LibTorch {} reads for Adam and AdamW "
                                    "only", path, compat::torch_version()));
}

}  // namespace

std::string optimizer_bytes(const torch::optim::Optimizer& optimizer, const std::string& path) {
  // The state's tensors are swapped for CPU copies while it is written, and
  // the originals put back (no copy back to the device), also on a throw.
  auto& o = const_cast<torch::optim::Optimizer&>(optimizer);
  std::vector<std::pair<torch::Tensor*, torch::Tensor>> kept;
  struct PutBack {
    std::vector<std::pair<torch::Tensor*, torch::Tensor>>& kept;
    ~PutBack() {
      for (auto& [slot, original] : kept) *slot = std::move(original);
    }
  } put_back{kept};
  const std::string what = fmt::format("an AdamW moment in the optimizer state of checkpoint '{}'", path);
  for (auto& item : o.state()) {
    for (torch::Tensor* t : moments(*item.second)) {
      if (!t->defined() || t->device().is_cpu()) continue;
      torch::Tensor host = host_tensor(*t, what);
      kept.emplace_back(t, *t);
      *t = std::move(host);
    }
  }
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  return bytes.str();
}

void restore_optimizer(std::string_view bytes, const std::string& path,
                       torch::optim::Optimizer& optimizer) {
  auto as_input = [](const std::string& archive_bytes) {
    std::istringstream stream(archive_bytes);
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
    auto archive = as_input(for_this_libtorch(std::string(bytes), path, optimizer));
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
  // The archive holds CPU tensors: each moment goes where its parameter is.
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      auto it = optimizer.state().find(compat::optimizer_state_key(p));
      if (it == optimizer.state().end() || p.device().is_cpu()) continue;
      for (torch::Tensor* t : moments(*it->second)) {
        if (t->defined()) *t = t->to(p.device());
      }
    }
  }
}


}  // namespace gpt2::detail
