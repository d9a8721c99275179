#include "gpt2/io/state_dict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <optional>

#include "gpt2/error.h"
#include "gpt2/ops/settings.h"

namespace gpt2 {
namespace {

// "3 NaN, the first at [5, 17]" for a tensor holding NaN; empty otherwise.
std::string nan_places(const torch::Tensor& nan) {
  const int64_t count = nan.sum().item<int64_t>();
  if (count == 0) return {};
  const torch::Tensor first = nan.nonzero()[0];
  std::vector<int64_t> at(first.data_ptr<int64_t>(), first.data_ptr<int64_t>() + first.numel());
  return fmt::format("{} NaN, the first at [{}]", count, fmt::join(at, ", "));
}

// Why two stored copies of the tied matrix cannot be one tensor, if they
// cannot. NaN equals nothing, itself included: copies with NaN at the same
// places and equal elsewhere are one matrix (its NaN are the non-finite
// report's to name); copies that differ in where they hold NaN are refused
// with each one's NaN counted and the first placed.
std::optional<std::string> tie_problem(const torch::Tensor& head, const torch::Tensor& wte) {
  if (torch::equal(head, wte)) return std::nullopt;
  const torch::Tensor head_nan = head.isnan(), wte_nan = wte.isnan();
  const bool same_nan = torch::equal(head_nan, wte_nan);
  if (same_nan && torch::equal(head.masked_fill(head_nan, 0), wte.masked_fill(wte_nan, 0))) {
    return std::nullopt;
  }
  std::string why;
  if (!same_nan) {  // they differ (at least) in where they hold NaN
    const std::string in_head = nan_places(head_nan), in_wte = nan_places(wte_nan);
    why = fmt::format(" (lm_head.weight holds {}; transformer.wte.weight holds {})",
                      in_head.empty() ? "no NaN" : in_head, in_wte.empty() ? "no NaN" : in_wte);
  }
  return "lm_head.weight and transformer.wte.weight differ, but this model ties them" + why;
}

}  // namespace

std::vector<std::string> state_dict_problems(const StateDict& tensors, const GPTImpl& model) {
  std::vector<std::string> out;
  const auto expected = model.named_parameters();
  for (const auto& item : expected) {
    auto found = tensors.find(item.key());
    if (found == tensors.end()) {
      out.push_back(fmt::format("missing {}", item.key()));
    } else if (!found->second.sizes().equals(item.value().sizes())) {
      out.push_back(fmt::format("size mismatch for {}: file {}, model {}", item.key(),
                                c10::str(found->second.sizes()), c10::str(item.value().sizes())));
    } else if (found->second.scalar_type() != item.value().scalar_type()) {
      out.push_back(fmt::format("dtype mismatch for {}: file {}, model {}", item.key(),
                                c10::toString(found->second.scalar_type()),
                                c10::toString(item.value().scalar_type())));
    }
  }
  for (const auto& [name, tensor] : tensors) {
    if (!expected.contains(name)) out.push_back(fmt::format("unexpected {}", name));
  }
  auto head = tensors.find("lm_head.weight"), wte = tensors.find("transformer.wte.weight");
  if (out.empty() && head != tensors.end() && wte != tensors.end() &&
      head->second.data_ptr() != wte->second.data_ptr()) {
    if (auto problem = tie_problem(head->second, wte->second)) out.push_back(std::move(*problem));
  }
  return out;
}

void load_state_dict(const StateDict& tensors, GPTImpl& model, const std::string& source,
                     std::vector<std::string> extra_problems, LoadMode mode) {
  auto found = std::move(extra_problems);
  for (auto& p : state_dict_problems(tensors, model)) found.push_back(std::move(p));
  if (!found.empty()) throw_load_problems(source, found);
  torch::NoGradGuard no_grad;
  for (const auto& item : model.named_unique_parameters()) {
    const torch::Tensor& from = tensors.at(item.key());
    // A whole contiguous storage is taken over, not copied: the parameter
    // (both names of the tied one) now holds it.
    const bool take = mode == LoadMode::kAdopt && from.is_contiguous() &&
                      from.storage_offset() == 0 && from.device() == item.value().device() &&
                      from.storage().nbytes() == from.nbytes();
    if (take) {
      item.value().set_data(from);
    } else {
      item.value().copy_(from);
    }
  }
}

namespace {

// Whether every value of a contiguous float32 tensor is finite, in one pass
// over its bits with nothing allocated (an exponent of all ones is inf or NaN).
// On the kernel threads: a first load reads its tensors here first.
bool all_finite_float(const torch::Tensor& t) {
  const auto* bits = static_cast<const uint32_t*>(t.data_ptr());
  uint32_t worst = 0;
  const int64_t n = t.numel();
  const int threads = kernel_threads();
#pragma omp parallel for schedule(static) num_threads(threads) reduction(max : worst) if (n > (1 << 20))
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t e = bits[i] & 0x7f800000u;
    worst = e > worst ? e : worst;
  }
  return worst != 0x7f800000u;
}

}  // namespace

std::vector<std::string> nonfinite_report(const StateDict& tensors) {
  std::vector<std::string> out;
  for (const auto& [name, t] : tensors) {
    if (!t.is_floating_point()) continue;
    if (t.scalar_type() == torch::kFloat && t.is_contiguous() && t.device().is_cpu() &&
        all_finite_float(t)) {
      continue;  // the common case, at memory speed
    }
    const int64_t nan = t.isnan().sum().item<int64_t>();
    const int64_t inf = t.isinf().sum().item<int64_t>();
    if (nan + inf > 0) {
      out.push_back(fmt::format("{} has {} NaN and {} infinite of {} values", name, nan, inf,
                                t.numel()));
    }
  }
  return out;
}

std::vector<std::string> nonfinite_report(const GPTImpl& model) {
  StateDict tensors;
  for (const auto& item : model.named_unique_parameters()) tensors[item.key()] = item.value();
  return nonfinite_report(tensors);
}

void throw_load_problems(const std::string& source, const std::vector<std::string>& problems) {
  throw CheckpointError(fmt::format("cannot load '{}' into the model ({} problem{}):\n  {}",
                                    source, problems.size(), problems.size() == 1 ? "" : "s",
                                    fmt::join(problems, "\n  ")));
}

}  // namespace gpt2
