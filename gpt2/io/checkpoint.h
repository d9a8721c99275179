#pragma once
/// Checkpoints: a TorchScript zip archive (torch::serialize::OutputArchive)
/// with the parameters under nanoGPT's names, the tied matrix stored once,
/// the full config, and training state. Python reads the weights with
/// `torch.jit.load(path).state_dict()` and the config as `m.gpt2.n_layer`.
///
/// Loading checks the whole file with the library's own gate (zip, record
/// set, code records, a restricted pickle reader, tensor sizes; see
/// gpt2/io/checkpoint/torch_archive.h) and reads the tensors from the checked records:
/// a checkpoint never reaches torch::jit::load (its optimizer state, which
/// Optimizer::load reads through LibTorch, passes the same gate first), and
/// a malformed one is a FormatError naming the file and the rule. Use these functions rather
/// than `torch::load(model, path)`, which in LibTorch 1.13 silently loads
/// tensors of another shape into a model of another width.
///
/// TorchScript export, the other archive: a standalone program that C++
/// apps without this library (torch::jit::load) and Python
/// (torch.jit.load) can run.

#include <torch/csrc/jit/api/module.h>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpt2/io/model_source.h"
#include "gpt2/io/state_dict.h"
#include "gpt2/model/config.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// Training state saved beside the weights; every field is optional.
struct TrainingState {
  /// Optimizer steps taken.
  int64_t step = 0;
  /// When set, its state (Optimizer::save) is stored.
  const torch::optim::Optimizer* optimizer = nullptr;
  /// When defined, stored as is (e.g. a generator's get_state()).
  torch::Tensor rng_state;
  /// When not empty, stored as is: free text (a trainer's notes as JSON).
  std::string extra;
  /// When not empty, a field table's values (stored_fields, e.g. of a
  /// trainer's TrainOptions), stored as typed attributes of the metadata
  /// module `train_options`, the way the config is stored in `gpt2`.
  StoredFields train_options;
};

/// A checkpoint read back with load_checkpoint. It always holds a model:
/// there is no default constructor, and an empty GPT is refused.
struct Checkpoint {
  /// Holds `model`; throws gpt2::Error if it is empty (GPT{nullptr}).
  explicit Checkpoint(GPT model);
  Checkpoint() = delete;

  /// The model the file describes, built from its config, weights loaded.
  GPT model;
  /// TrainingState::step as saved.
  int64_t step = 0;
  /// TrainingState::rng_state as saved; undefined if none was.
  torch::Tensor rng_state;
  /// Whether optimizer state is stored (restore it with load_optimizer_state).
  bool has_optimizer_state = false;
  /// TrainingState::extra as saved; empty if none was.
  std::string extra;
  /// TrainingState::train_options as saved (load_fields reads a table from
  /// them); empty if none was.
  StoredFields train_options;
  /// Things worth telling a user, e.g. that the file predates checksums.
  std::vector<std::string> notes;
  /// nonfinite_report of the weights (also in notes): empty when every
  /// value is finite.
  std::vector<std::string> nonfinite;
};

/// Writes model and state to `path` atomically (see write_atomically): on any
/// failure an existing file is untouched. Throws FileError naming `path`.
/// The CRC-32 of each tensor's bytes is stored too and verified by every
/// load (a mismatch is a CheckpointError naming the tensor); files written
/// before checksums load with a note (Checkpoint::notes).
void save_checkpoint(const std::string& path, const GPTImpl& model,
                     const TrainingState& state = {});

/// Builds the model `path` describes and loads it. Throws FileError for a
/// file that cannot be read or is not a gpt2 checkpoint (FormatError when it
/// breaks a rule of the archive), CheckpointError for one whose tensors do
/// not fit its own config. float16/bfloat16 weights are converted to
/// float32 and NaN or infinite weights are named, both in `notes`.
/// `options.mmap()` says whether the weights stay in the file's pages (Mmap
/// says what that trades), every check the same.
Checkpoint load_checkpoint(const std::string& path, const LoadOptions& options = {});

/// load_checkpoint of an archive already in memory (`bytes`, which need not
/// outlive the call), through the same gate; `name` stands for the path in
/// messages. The fuzzer's entry point, and an app's that reads its own way.
Checkpoint load_checkpoint_bytes(std::string_view bytes, const std::string& name);

/// The config stored in `path`.
GPTConfig read_checkpoint_config(const std::string& path);

/// The weights of checkpoint `path` as stored (every byte checked as
/// load_checkpoint checks it), by nanoGPT name; names of one tensor share it.
StateDict read_checkpoint_tensors(const std::string& path);

/// Loads the weights in `path` into `model`. Everything is checked first:
/// the architecture in the file's config, every expected name present, no
/// unknown names, shapes and dtypes equal to the model's, the tied names
/// equal. One CheckpointError lists every problem, and then `model` is
/// bit-identical to before. The tie holds after load.
void load_weights(const std::string& path, GPTImpl& model);

/// Restores the optimizer state saved in `path` into `optimizer`, which must
/// be built over the same parameters. Throws CheckpointError if none is
/// stored, or if a stored Adam/AdamW moment's shape differs from its
/// parameter's (LibTorch's load does not check), naming group, index and
/// shapes; `optimizer` is then as before.
void load_optimizer_state(const std::string& path, torch::optim::Optimizer& optimizer);

/// A torch::jit::Module mirroring the model's tree and names, holding the
/// model's own tensors (the tied one registered as both
/// transformer.wte.weight and lm_head.weight), with
/// `forward(idx (B, T) int64) -> logits (B, T, vocab_size)` compiled from
/// TorchScript source by Module::define. T stays dynamic up to block_size;
/// dropout is left out (an exported program is for inference).
torch::jit::Module to_torchscript(const GPTImpl& model);

/// Saves to_torchscript(model) to `path` atomically. The model is not
/// changed. Throws FileError naming `path`.
void export_torchscript(const GPTImpl& model, const std::string& path);

}  // namespace gpt2
