#include <fmt/format.h>

#include "gpt2/error.h"
#include "gpt2/io/model_source.h"
#include "gpt2/io/import.h"

namespace gpt2::detail {

GPT build_and_load(const GPTConfig& config, const StateDict& tensors, torch::ScalarType dtype,
                   const std::string& source, std::vector<std::string> problems, LoadMode mode) {
  try {
    config.validate();
  } catch (const ConfigError& e) {
    problems.push_back(fmt::format("the config read from the file is invalid: {}", e.what()));
    throw_load_problems(source, problems);
  }
  // Sizes from a file's shapes are untrusted: a model needing more values
  // than the file holds cannot load, so it is not allocated. Doubles avoid
  // overflow; the bound is loose.
  double held = 0;
  for (const auto& item : tensors) held += static_cast<double>(item.second.numel());
  const double c = static_cast<double>(config.n_embd());
  const double needed = c * static_cast<double>(config.vocab_size() + config.block_size()) +
                        static_cast<double>(config.n_layer()) * 12.0 * c * c;
  if (needed > held * 1.01 + 16) {
    problems.push_back(fmt::format("the file holds {} values, a model of its shapes ({}) needs {}",
                                   held, to_string(config), needed));
    throw_load_problems(source, problems);
  }
  check_fits_in_memory(config, static_cast<int64_t>(c10::elementSize(dtype)));
  GPT model(GPTImpl::uninitialized(config));
  model->to(dtype);
  load_state_dict(converted(tensors, dtype), *model, source, std::move(problems), mode);
  return model;
}

StateDict converted(const StateDict& tensors, torch::ScalarType dtype) {
  StateDict out;
  for (const auto& [name, tensor] : tensors) out[name] = tensor.to(dtype);
  return out;
}

}  // namespace gpt2::detail
