#pragma once
/// nanoGPT's own checkpoint, `out/ckpt.pt`: Python's torch.save of the dict
/// train.py writes, `model` (the state dict, `_orig_mod.` before every name
/// when the run used torch.compile), `optimizer` (torch.optim.AdamW's
/// state_dict over nanoGPT's two parameter groups), `model_args`,
/// `iter_num`, `best_val_loss` and `config`.
///
/// Read through the library's own archive gate and the torch.save dialect
/// of its pickle reader (gpt2/io/checkpoint/torch_archive.h, pickle.h):
/// three globals in fixed forms, nothing in the file is imported or run,
/// and every tensor is checked against its storage record. The weights
/// then pass the one state-dict validator (state_dict.h). Written back
/// with the library's torch.save-compatible pickle writer, so that
/// nanoGPT's `train.py --init_from=resume` and `sample.py` read it.

#include <torch/arg.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpt2/fields/fields.h"
#include "gpt2/io/model_source.h"
#include "gpt2/io/state_dict.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// What a nanoGPT ckpt.pt holds beside the weights and the optimizer.
struct NanoGPTRun {
  /// train.py's iter_num: the iteration the run continues at.
  int64_t iter_num = 0;
  /// best_val_loss (a 0-d tensor in the file; nanoGPT's 1e9 before any eval).
  double best_val_loss = 1e9;
  /// train.py's `config` dict, its int, bool, float and str entries in file
  /// order (learning_rate, warmup_iters, ..., dataset).
  StoredFields config;
};

/// nanoGPT's AdamW state_dict, its positions turned into parameter names.
struct NanoGPTAdamW {
  /// One of nanoGPT's two groups (decay, then no decay).
  struct Group {
    double lr = 6e-4, weight_decay = 0.1, beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
    /// Its parameters' names, in the group's order.
    std::vector<std::string> names;
  };
  /// AdamW's per-parameter state.
  struct Moments {
    int64_t step = 0;
    torch::Tensor exp_avg, exp_avg_sq;
  };
  std::vector<Group> groups;
  /// By parameter name; a parameter that has taken no step has none.
  std::map<std::string, Moments> state;
};

/// A nanoGPT checkpoint read back.
struct NanoGPTCheckpoint {
  /// Built from model_args (nanoGPT's exact GELU; vocab_size as the file
  /// says, 50304 for nanoGPT's padded GPT-2 vocabulary), weights loaded.
  GPT model{nullptr};
  NanoGPTRun run;
  /// The optimizer state, when read with NanoGPTReadOptions::optimizer.
  std::optional<NanoGPTAdamW> optimizer;
  /// Things a user may want to know (names dropped, dtypes widened).
  std::vector<std::string> notes;
  /// nonfinite_report of the weights (also in notes).
  std::vector<std::string> nonfinite;
};

/// How to read a nanoGPT checkpoint.
struct NanoGPTReadOptions {
  /// Whether the weights stay in the file's pages (Mmap).
  TORCH_ARG(Mmap, mmap) = Mmap::kOff;
  /// Whether the optimizer state is read (and checked) too.
  TORCH_ARG(bool, optimizer) = false;
};

/// The prefix torch.compile's wrapper gives every name; stripped at load.
inline constexpr const char* kCompiledPrefix = "_orig_mod.";

/// Reads nanoGPT's ckpt.pt. FormatError for a file that breaks a rule of
/// the archive or pickle (an unknown global named, nothing run);
/// CheckpointError listing every problem of one that does not describe a
/// model (a missing key, a model_args field of the wrong type, a tensor of
/// the wrong shape, a storage that fails its CRC-32, optimizer state that
/// does not fit a parameter). Causal-mask buffers (`attn.bias`, which
/// nanoGPT keeps on torch < 2.0) are dropped.
NanoGPTCheckpoint load_nanogpt(const std::string& path, const NanoGPTReadOptions& options = {});

/// The tensors of nanoGPT's `ckpt.pt` at `path` as stored, by name
/// (torch.compile's prefix dropped): lm_head.weight and transformer.wte.weight
/// share storage where train.py's tie saved them so. CheckpointError for a
/// file that is not train.py's dict or holds damaged tensors.
StateDict read_nanogpt_tensors(const std::string& path);

/// load_nanogpt of a file already in memory (`bytes`, which need not outlive
/// the call; options.mmap() does not apply), through the same gate; `name`
/// stands for the path in messages. The fuzzer's entry point.
NanoGPTCheckpoint load_nanogpt_bytes(std::string_view bytes, const std::string& name,
                                     const NanoGPTReadOptions& options = {});

/// The names nanoGPT's configure_optimizers puts in its decay (dim >= 2)
/// and no-decay groups, in named_parameters() order, the tied matrix once
/// as transformer.wte.weight: the key from an optimizer state's positions
/// to names.
std::array<std::vector<std::string>, 2> nanogpt_param_groups(const GPTConfig& config);

/// Puts `state` into `optimizer` (over `model`'s parameters, grouped in any
/// way whose groups each take from one nanoGPT group): moments and step by
/// name and shape, each group's lr, betas, eps and weight_decay from the
/// file. CheckpointError naming `source` and listing every problem;
/// `optimizer` is then as before.
void restore_nanogpt_optimizer(const NanoGPTAdamW& state, const GPTImpl& model,
                               torch::optim::AdamW& optimizer, const std::string& source);

/// Writes `model` as nanoGPT's ckpt.pt, atomically: the state dict (the
/// tied matrix one storage), `optimizer`'s state in nanoGPT's two groups
/// (an empty state with the config's learning_rate, weight_decay, beta1
/// and beta2, or nanoGPT's defaults, when null), model_args, and `run`.
/// Every tensor is written from a CPU copy. Returns notes for the user (a
/// tanh-GELU model meets nanoGPT's exact GELU).
std::vector<std::string> save_nanogpt(const std::string& path, const GPTImpl& model,
                                      const NanoGPTRun& run = {},
                                      const torch::optim::AdamW* optimizer = nullptr);

}  // namespace gpt2
