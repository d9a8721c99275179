#pragma once
/// The knobs of the ops layer: which path float32 CPU products take, how
/// many threads the library's own kernels run on, where their large buffers
/// come from, and the smaller weight formats for decoding. Every one has a
/// default that needs no call; docs/speed.md says how to change each and
/// docs/cpu-kernels.md why each exists.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpt2/fields/fields.h"

namespace gpt2 {

// --- Products -------------------------------------------------------------

/// Where float32 CPU matrix products go.
enum class MatmulBackend {
  kTorch,   ///< torch::linear / torch::matmul: the system BLAS
  kOneDnn,  ///< oneDNN's sgemm (the default when the library is built with it)
};

/// The process-wide choice: the one set_matmul_backend() forced, else
/// choose_matmul_backend()'s, made at the first call.
MatmulBackend matmul_backend();
/// Forces the process-wide choice. Throws gpt2::Error for kOneDnn in a
/// build without oneDNN.
void set_matmul_backend(MatmulBackend backend);
/// Drops a forced choice: matmul_backend() is the rule's again.
void reset_matmul_backend();

/// A backend and why it was chosen, in words (`onednn: OpenBLAS runs its
/// generic Prescott kernels`).
struct BackendChoice {
  MatmulBackend backend;
  std::string reason;
  /// Whether set_matmul_backend chose it (not the rule).
  bool forced = false;
};
/// The rule: oneDNN when the build has it (it ran the model's products
/// faster on every CPU measured; `gpt2 bench products` checks yours).
BackendChoice choose_matmul_backend();
/// What matmul_backend() is and why.
BackendChoice matmul_backend_choice();

/// Whether `core` (openblas_get_corename()) is one of OpenBLAS's generic
/// x86-64 kernel sets from before AVX ("Prescott", "Core2", ...), which it
/// falls back to on CPUs it does not know.
bool is_generic_openblas_core(const std::string& core);
/// Whether this build can use oneDNN.
bool onednn_available();
/// "torch" or "onednn": names<MatmulBackend>(), as every enum's text.
std::string to_string(MatmulBackend backend);

// --- Threads --------------------------------------------------------------

/// Threads of the library's own kernels (oneDNN products, attention, the
/// pointwise backwards, AdamW, the load's checksums): by default
/// usable_cores(), whatever width torch's own intra-op pool has.
int kernel_threads();
/// Sets them; 0 restores the default. Throws gpt2::Error below 0.
void set_kernel_threads(int threads);
/// The cores this process may run on: OMP_NUM_THREADS when set to a
/// positive number, else the CPUs in its affinity mask, at least 1.
int usable_cores();

/// While alive on a thread outside an OpenMP parallel region, the OpenMP
/// teams that thread starts (oneDNN, at::parallel_for) hold
/// kernel_threads() threads; the thread's own count comes back when the
/// scope ends. Inside a parallel region it does nothing. Scopes nest.
class KernelTeam {
 public:
  KernelTeam();
  ~KernelTeam();
  KernelTeam(const KernelTeam&) = delete;
  KernelTeam& operator=(const KernelTeam&) = delete;

 private:
  int saved_ = 0;  // 0: nothing to restore
};

// --- The kernels' memory --------------------------------------------------

/// Bytes the kernels' buffer pool holds free for reuse, and in how many
/// blocks. The pool keeps blocks of 16 MB and more that a product or the
/// loss allocated, so the next step reuses them instead of faulting in
/// fresh pages.
struct KernelMemory {
  int64_t free_bytes = 0;
  int64_t free_blocks = 0;
  /// The most free_bytes may reach: by default an eighth of usable_memory().
  int64_t cap_bytes = 0;
};
KernelMemory kernel_memory();
/// Frees every block held for reuse.
void release_kernel_memory();
/// Sets the cap on the bytes held free; 0 keeps nothing, -1 restores the
/// default. Lowering it frees blocks down to the new cap. Throws
/// gpt2::Error below -1.
void set_kernel_memory_cap(int64_t bytes);

/// Whether the library's large tensors (weights it builds or loads, packed
/// copies, AdamW's moments, pooled blocks) are mapped on transparent huge
/// pages. kAuto measures once per process, at the first large tensor.
enum class HugePages { kAuto, kOn, kOff };
/// The choice and why.
struct HugePagesChoice {
  bool on = false;
  /// The measurement, the kernel's setting, GPT2_HUGE_PAGES, or "set by
  /// set_huge_pages".
  std::string reason;
};
/// set_huge_pages()'s choice, else GPT2_HUGE_PAGES (on, off, auto), else the
/// measurement. Throws gpt2::Error for another GPT2_HUGE_PAGES value.
HugePagesChoice huge_pages_choice();
/// Forces huge pages on or off for mappings made from here on, or (kAuto)
/// goes back to the measurement.
void set_huge_pages(HugePages mode);
/// "on" or "off" and the reason.
std::string to_string(const HugePagesChoice& choice);

/// glibc's heap policy as the library sees it: kUntouched (glibc's
/// defaults: the library never changes them on its own) or kApps (the app
/// or configure_runtime() took it, or the environment sets a malloc
/// tunable).
enum class HeapPolicy { kUntouched, kApps };
HeapPolicy heap_policy();
/// "glibc's default" or "the app's".
std::string to_string(HeapPolicy policy);
/// Records that the app chose glibc's heap policy (configure_runtime()'s
/// keep_freed_memory() calls it).
void leave_heap_policy_to_app();
/// Whether the environment sets glibc's malloc policy: MALLOC_MMAP_THRESHOLD_,
/// MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_MAX_, MALLOC_TOP_PAD_, or glibc.malloc
/// in GLIBC_TUNABLES.
bool malloc_tuned_by_environment();

// --- The head and the loss -------------------------------------------------

/// How a training step runs lm_head's product and the loss (ops::head_loss,
/// which GPTImpl::loss calls).
enum class HeadLossPath {
  kAuto,    ///< fused off the CPU; the two ops on it, where they ran faster
  kFused,   ///< fused_head_loss everywhere (gpt2/ops/fused/head_loss.h)
  kTwoOps,  ///< the product, then the loss, everywhere: nanoGPT's
};
/// The process-wide choice: kAuto until set_head_loss_path() says otherwise.
HeadLossPath head_loss_path();
/// Sets the process-wide choice; kAuto restores the rule.
void set_head_loss_path(HeadLossPath path);

// --- The library's own CUDA kernels --------------------------------------

/// Whether this build holds them (gpt2/ops/cuda/): a LibTorch with CUDA and
/// nvcc found by CMake (the GPT2_CUDA_KERNELS option, on where both are).
bool cuda_kernels_built();
/// Whether the ops seam runs them where they apply: true until
/// set_cuda_kernels(false), after which torch's ops run everywhere on a GPU
/// (to compare the two, or to rule the kernels out).
bool cuda_kernels_enabled();
/// Sets the process-wide choice.
void set_cuda_kernels(bool on);
/// What a run on a GPU takes of them, for its device line: the ops and
/// when, or why none.
std::string cuda_kernels_line();

// --- Weight formats for decoding ------------------------------------------

/// How a Linear's weight is read by products run without autograd.
enum class WeightFormat {
  kFloat32,   ///< the weight itself
  kBFloat16,  ///< rounded to bfloat16 (to nearest, ties to even)
  kInt8,      ///< per output row: scale = max |w| / 127, q = round(w / scale)
};
/// "fp32", "bf16", "int8".
std::string to_string(WeightFormat format);
/// Inverse of to_string; throws ConfigError naming the spellings.
WeightFormat weight_format_from_string(const std::string& name);

/// The spellings of the enums above (names<Enum>() in gpt2/fields/fields.h):
/// `torch`, `onednn`; `auto`, `on`, `off`; `glibc's default`, `the app's`;
/// `fp32`, `bf16`, `int8`; `auto`, `fused`, `two-ops`.
template <>
const std::vector<std::pair<MatmulBackend, std::string>>& names<MatmulBackend>();
template <>
const std::vector<std::pair<HugePages, std::string>>& names<HugePages>();
template <>
const std::vector<std::pair<HeapPolicy, std::string>>& names<HeapPolicy>();
template <>
const std::vector<std::pair<WeightFormat, std::string>>& names<WeightFormat>();
template <>
const std::vector<std::pair<HeadLossPath, std::string>>& names<HeadLossPath>();

}  // namespace gpt2
