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

#include "gpt2/error.h"
#include "gpt2/io/checkpoint/checkpoint_fields.h"

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

}  // namespace

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
    auto archive = as_input(std::string(bytes));
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


}  // namespace gpt2::detail
