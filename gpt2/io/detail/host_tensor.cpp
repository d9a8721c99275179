#include "gpt2/io/detail/host_tensor.h"

#include <fmt/format.h>

#include "gpt2/error.h"

namespace gpt2::detail {
namespace {

// Why `t`'s values cannot be copied to the CPU, or "" when they can.
std::string unreadable(const at::Tensor& t) {
  if (!t.defined()) return "it is undefined";
  if (t.is_meta()) return "it is on the meta device, which holds shapes and no values";
  return {};
}

}  // namespace

at::Tensor host_tensor(const at::Tensor& t, const std::string& what,
                       c10::optional<at::ScalarType> dtype) {
  if (const std::string why = unreadable(t); !why.empty()) {
    throw FileError(fmt::format("cannot write {}: {}", what, why));
  }
  try {
    at::Tensor host = t.detach();
    if (!host.device().is_cpu()) host = host.to(at::kCPU);
    if (dtype && host.scalar_type() != *dtype) host = host.to(*dtype);
    return host.contiguous();
  } catch (const c10::Error& e) {
    throw FileError(fmt::format("cannot write {}: its values on {} cannot be copied to the CPU: {}",
                                what, t.device().str(), e.what_without_backtrace()));
  }
}

std::string_view host_bytes(const at::Tensor& host) {
  TORCH_CHECK(host.defined() && host.device().is_cpu() && host.is_contiguous(),
              "host_bytes takes a contiguous CPU tensor from host_tensor, got one on ",
              host.defined() ? host.device().str() : std::string("no device"));
  return {static_cast<const char*>(host.data_ptr()), host.nbytes()};
}

HostModel::HostModel(const GPTImpl& model, const std::string& file) : model_(&model) {
  bool on_cpu = true;
  for (const auto& item : model.named_unique_parameters()) {
    const std::string why = unreadable(item.value());
    if (!why.empty()) throw FileError(fmt::format("cannot write {}: its {}: {}", file, item.key(), why));
    on_cpu = on_cpu && item.value().device().is_cpu();
  }
  if (on_cpu) return;
  try {
    copy_ = std::dynamic_pointer_cast<GPTImpl>(model.clone(at::Device(at::kCPU)));
  } catch (const c10::Error& e) {
    throw FileError(fmt::format("cannot write {}: the model's values cannot be copied to the CPU: {}",
                                file, e.what_without_backtrace()));
  }
  model_ = copy_.get();
}

}  // namespace gpt2::detail
