#pragma once
/// One entry point for every weight file this library reads and writes:
/// gpt2 checkpoints (`.pt`), nanoGPT's `ckpt.pt` (Python's torch.save),
/// Hugging Face safetensors (a `.safetensors` file or a folder with
/// `model.safetensors` and `config.json`) and llm.c model files (`.bin`).
/// Commands that take a model (`generate`, `eval`, `serve`, `inspect`,
/// `export`, `convert`, `train --init-from`) load it with load_model.
///
/// Also what every reader shares: LoadOptions (whether the weights stay in
/// the file's pages), and the size check for models made from files and
/// flags: a config read from a checkpoint or typed on a command line is
/// held against the memory this process may use before anything is
/// allocated, so a size typo in a container fails at once with the
/// container's figure instead of meeting the OOM killer later. GPT's
/// constructor does not check: an app that builds a model from its own
/// config calls check_fits_in_memory where it wants the check.

#include <torch/arg.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpt2/fields/fields.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// Whether a loaded model's weights stay in the file's own pages.
///
/// Mapped, the file is mapped copy-on-write: a write to a weight copies that
/// page for this process alone and the file never changes. Every check runs
/// as in a copying load (each byte's checksum, sizes, names) and the model
/// is the same, but the load reads the page cache in place: there is no
/// fresh memory to zero and fault in, most of a first load's time, and
/// processes that map one file share its pages (docs/speed.md). The cost:
/// the model then depends on the file. If another program truncates or
/// rewrites it in place while the model lives, reads see the new bytes or
/// the process gets SIGBUS. This library's writers replace a file by
/// rename, which leaves a mapped file whole (`cp` over it does not).
/// Tensors whose bytes need a conversion (float16 to float32, a Conv1D
/// transpose) are copies either way. For inference: a training step writes
/// every weight, one page copy at a time.
enum class Mmap {
  /// Weights in memory the model owns (on huge pages where they fault in
  /// faster, as every large tensor: HugePages in gpt2/ops/settings.h). The
  /// default. Tensors
  /// of 2 MiB or more are read (pread on the kernel threads) into one block
  /// per load, at their offsets in the file, and view it; the block gets
  /// pages only where something is read. Copying out of a mapping faulted
  /// every page of the file in first, most of the time on a file the page
  /// cache holds in 4 KiB pages.
  kOff,
  /// Always leave the weights in the file's pages.
  kOn,
  /// Leave them there where the kernel maps at least half of a sample of
  /// the file (eight 2 MiB pieces, spread) in 2 MiB pages, and load as
  /// kOff elsewhere: on 4 KiB pages a decoding step ran about a tenth
  /// slower, on 2 MiB pages as fast as on the process's own huge pages
  /// (docs/cpu-kernels.md). The page cache holds a file in 2 MiB folios
  /// when it was written in 2 MiB pieces, as this library's writers write,
  /// or read in cold through such a mapping, on filesystems that have large
  /// folios (ext4 under Linux 6.18 here); one written in small pieces (by
  /// `dd bs=4k`, say) stays in 4 KiB pages while it is cached.
  kAuto,
};

/// The spellings of Mmap: `off`, `on`, `auto`.
template <>
const std::vector<std::pair<Mmap, std::string>>& names<Mmap>();
/// "off", "on", "auto".
std::string to_string(Mmap mmap);
/// Inverse of to_string(Mmap); ConfigError naming the spellings otherwise.
Mmap mmap_from_string(const std::string& name);

/// Options shared by the weight-file readers.
struct LoadOptions {
  /// Whether the weights stay in the file's pages (Mmap).
  TORCH_ARG(Mmap, mmap) = Mmap::kOff;
};

/// Throws ConfigError with the byte counts when config's parameters, at
/// `bytes_per_parameter` each, need more than this process may use
/// (usable_memory(): physical memory or a lower cgroup limit, named in the
/// message).
void check_fits_in_memory(const GPTConfig& config, int64_t bytes_per_parameter = 4);

/// The two versions of llm.c's model file (gpt2/io/llmc.h).
enum class LlmcDtype {
  kFloat32,   ///< version 3
  kBFloat16,  ///< version 5
};

/// The weight file formats.
enum class ModelFormat {
  kCheckpoint,   ///< gpt2's TorchScript checkpoint (checkpoint.h)
  kSafetensors,  ///< Hugging Face GPT-2 (hf_gpt2.h)
  kLlmc,         ///< llm.c's model file (llmc.h)
  kNanoGPT,      ///< nanoGPT's ckpt.pt, Python's torch.save (nanogpt.h)
};

/// The spellings (names<Enum>() in gpt2/fields/fields.h): "checkpoint",
/// "safetensors", "llmc", "nanogpt", the command's --from/--to; "float32",
/// "bfloat16" for llm.c's two versions.
template <>
const std::vector<std::pair<ModelFormat, std::string>>& names<ModelFormat>();
template <>
const std::vector<std::pair<LlmcDtype, std::string>>& names<LlmcDtype>();
std::string to_string(ModelFormat format);
std::string to_string(LlmcDtype dtype);
/// Inverse of to_string(ModelFormat); throws ConfigError naming the spellings.
ModelFormat model_format_from_string(const std::string& name);

/// The format of `path` by its name: a folder or `.safetensors` is
/// safetensors (so is a path ending in `/`), `.bin` llm.c, `.pt` a
/// checkpoint, or nanoGPT's where the file is a zip that Python's
/// torch.save wrote (data.pkl without constants.pkl or code/). Any other
/// name is told by the file's bytes (llm.c's magic, a safetensors header,
/// a torch.save zip, else a checkpoint); FileError if it is not a regular
/// file that can be read (missing, a FIFO, a device...).
ModelFormat detect_model_format(const std::string& path);

/// How to read a model file.
struct ModelSourceOptions {
  /// The format; detect_model_format(path) when unset.
  TORCH_ARG(std::optional<ModelFormat>, format) = std::nullopt;
  /// n_head for a safetensors file without config.json.
  TORCH_ARG(std::optional<int64_t>, n_head) = std::nullopt;
  /// Whether the weights stay in the file's pages (Mmap says what that
  /// trades). `gpt2 generate` and `gpt2 eval` load with Mmap::kAuto.
  TORCH_ARG(Mmap, mmap) = Mmap::kOff;
  /// Whether weights that are NaN or infinite are loaded (and named in the
  /// notes) instead of refused: for tools that report them.
  TORCH_ARG(bool, allow_nonfinite) = false;
};

/// A model read from a file of any format.
struct LoadedModel {
  /// Built from the file's config, weights loaded through load_state_dict.
  GPT model{nullptr};
  /// The format it was read as.
  ModelFormat format = ModelFormat::kCheckpoint;
  /// Things a user may want to know (a checkpoint without checksums).
  std::vector<std::string> notes;
};

/// Reads the model in `path`, of any format. Errors as each reader's:
/// FileError / FormatError for unreadable or malformed files,
/// CheckpointError listing every problem of one that does not describe a
/// model; and, in every format, FormatError `'PATH': NAME has 1 NaN and 0
/// infinite of 768 values...` for weights that are not finite, unless
/// options.allow_nonfinite().
LoadedModel load_model_file(const std::string& path, const ModelSourceOptions& options = {});

/// A model file's tensors as the file stores them, for tools that judge
/// the file rather than load it (`gpt2 inspect --audit-init`).
struct FileTensors {
  /// By nanoGPT name; lm_head.weight only where the file holds one, and
  /// then sharing storage with transformer.wte.weight where the file does.
  std::map<std::string, torch::Tensor> tensors;
  /// The format read.
  ModelFormat format = ModelFormat::kCheckpoint;
  /// Whether the format can hold one tensor under two names (torch.save's
  /// archives can: checkpoints and nanoGPT's ckpt.pt; safetensors and
  /// llm.c files cannot).
  bool one_storage_possible = false;
};

/// Reads the tensors of the model file `path` (any format, as
/// load_model_file takes it) without building a model: no name, shape or
/// tie is required of them, every byte is checked as the loaders check it.
FileTensors read_model_tensors(const std::string& path, const ModelSourceOptions& options = {});

/// load_model_file(path, options).model.
GPT load_model(const std::string& path, const ModelSourceOptions& options = {});

/// How to write a model file.
struct ModelSaveOptions {
  /// The format; detect_model_format(path) when unset.
  TORCH_ARG(std::optional<ModelFormat>, format) = std::nullopt;
  /// For llm.c files: version 3 (float32) or 5 (bfloat16).
  TORCH_ARG(LlmcDtype, llmc_dtype) = LlmcDtype::kFloat32;
};

/// Writes `model` to `path` in the chosen format (weights only for a
/// checkpoint; nanoGPT's dict with an empty optimizer state and iter_num 0
/// for kNanoGPT, which a `.pt` name never chooses), atomically. Returns the format written. Without a format,
/// a path that does not exist must say it by its name (.pt, .safetensors or
/// a trailing /, .bin): ConfigError otherwise, before anything is written.
ModelFormat save_model(const std::string& path, const GPTImpl& model,
                       const ModelSaveOptions& options = {});

}  // namespace gpt2
