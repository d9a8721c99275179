#pragma once
// The one way gpt2/io reads the values of tensors it writes (internal to
// gpt2/io). A tensor's bytes are read (data_ptr, checksums, mapped views)
// only once it is known to be a CPU tensor: every writer (checkpoints,
// optimizer state, TorchScript export, safetensors, llm.c files) takes
// its tensors through here, so a model on a GPU is written from a CPU copy
// and one whose values cannot be read (the meta device holds none) is a
// FileError naming the tensor, before anything is written.

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <memory>
#include <string>
#include <string_view>

#include "gpt2/model/gpt.h"

namespace gpt2::detail {

/// `t`'s values as a contiguous CPU tensor, detached: `t` itself where it
/// already is one, else a copy, cast to `dtype` when one is given. `what`
/// names the tensor and the file for the error: "transformer.wte.weight of
/// checkpoint 'out/ckpt.pt'". Throws FileError where `t` is undefined or
/// its values cannot be brought to the CPU.
at::Tensor host_tensor(const at::Tensor& t, const std::string& what,
                       c10::optional<at::ScalarType> dtype = c10::nullopt);

/// The bytes of a tensor host_tensor returned, in row-major order.
/// TORCH_CHECKs that it is a contiguous CPU tensor.
std::string_view host_bytes(const at::Tensor& host);

/// `model` with every parameter on the CPU: `model` itself where they all
/// are, else a copy (the tie kept) that `holder` keeps alive. `file` names
/// what is being written, for the error: "checkpoint 'out/ckpt.pt'".
/// Throws FileError, naming the first parameter whose values cannot be
/// read, before any copy is made.
class HostModel {
 public:
  HostModel(const GPTImpl& model, const std::string& file);
  const GPTImpl& operator*() const { return *model_; }
  const GPTImpl* operator->() const { return model_; }

 private:
  std::shared_ptr<GPTImpl> copy_;
  const GPTImpl* model_;
};

}  // namespace gpt2::detail
