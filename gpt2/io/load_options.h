#pragma once
/// How the readers of weight files (load_checkpoint, load_llmc,
/// load_safetensors through HfReadOptions, load_model_file through
/// ModelSourceOptions) place the weights they load.

#include <torch/arg.h>

#include <string>
#include <utility>
#include <vector>

#include "gpt2/fields/fields.h"

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

}  // namespace gpt2
