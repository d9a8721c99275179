#pragma once
/// The one gate every weight file passes on its way into a model: names,
/// shapes, dtypes and the tie are checked first, every problem is reported
/// in one error, and the model changes only when there is none.

#include <torch/types.h>

#include <map>
#include <string>
#include <vector>

#include "gpt2/model/gpt.h"

namespace gpt2 {

/// Tensors read from a file, by nanoGPT name (`transformer.h.0.ln_1.weight`).
using StateDict = std::map<std::string, torch::Tensor>;

/// Every reason `tensors` cannot be copied into `model`: a name missing or
/// unknown, a shape or dtype different from the model's, lm_head.weight and
/// transformer.wte.weight both present and different. Empty when it fits.
std::vector<std::string> state_dict_problems(const StateDict& tensors, const GPTImpl& model);

/// How load_state_dict puts a tensor into the model.
enum class LoadMode {
  kCopy,   ///< copy into the model's own storage
  kAdopt,  ///< take over the tensor's storage when it is all the tensor's (a
           ///< fresh model from a loader's own buffers: no second copy)
};

/// Copies (or adopts) `tensors` into `model` when state_dict_problems is
/// empty; else throws CheckpointError naming `source` and listing every
/// problem (plus `extra_problems`, found by the caller, e.g. config
/// fields), and `model` is bit-identical to before. The tie holds after a
/// load. kAdopt only where nothing else holds the tensors' storage
/// (writes to the model would show through it).
void load_state_dict(const StateDict& tensors, GPTImpl& model, const std::string& source,
                     std::vector<std::string> extra_problems = {},
                     LoadMode mode = LoadMode::kCopy);

/// One line per floating tensor holding NaN or infinite values, naming it:
/// `transformer.wpe.weight has 3 NaN and 1 infinite of 256 values`. Empty
/// when every value is finite. Loaders put these in their notes; inspect prints them.
std::vector<std::string> nonfinite_report(const StateDict& tensors);
/// nonfinite_report over `model`'s parameters (the tied matrix once).
std::vector<std::string> nonfinite_report(const GPTImpl& model);

/// Throws the CheckpointError load_state_dict throws for `problems` (not
/// empty), for importers that find problems before a model can be built.
[[noreturn]] void throw_load_problems(const std::string& source,
                                      const std::vector<std::string>& problems);

}  // namespace gpt2
