#include "gpt2/ops/cpu/matmul.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/nn/functional/linear.h>

#include <dlfcn.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "gpt2/error.h"
#include "gpt2/ops/memory/buffer_pool.h"
#include "gpt2/ops/cpu/sgemm.h"

#ifdef GPT2_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace gpt2 {
namespace {

// The forced choice, or kUnset for the rule's.
constexpr int kUnset = -1;
std::atomic<int> forced{kUnset};
std::atomic<int> kernel_thread_count{0};  // 0: usable_cores()

// The rule's choice, made once per process.
const BackendChoice& rule() {
  static const BackendChoice choice = choose_matmul_backend();
  return choice;
}

MatmulBackend current() {
  const int f = forced.load(std::memory_order_relaxed);
  return f == kUnset ? rule().backend : static_cast<MatmulBackend>(f);
}

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

#ifdef GPT2_WITH_ONEDNN
using detail::Matrix;
using detail::sgemm;

// A 2-D float tensor whose rows are contiguous, as sgemm reads it.
Tensor rows(const Tensor& t) {
  const bool fits = t.stride(1) == 1 && (t.size(0) == 1 || t.stride(0) >= t.size(1));
  return fits ? t : t.contiguous();
}
Matrix matrix(const Tensor& t) {
  return {t.data_ptr<float>(), t.size(0) == 1 ? t.size(1) : t.stride(0)};
}

// x (M, K), W (N, K) -> x W^T + b (M, N).
Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t M = x.size(0), N = w.size(0), K = x.size(1);
  Tensor y = detail::empty_pooled({M, N});
  KernelTeam team;
  if (b.defined()) y.copy_(b);  // rows of b, added to by the product (never b itself: M may be 1)
  sgemm(false, true, M, N, K, 1.0f, matrix(x), matrix(w), b.defined() ? 1.0f : 0.0f,
        y.data_ptr<float>(), N);
  return y;
}

// Autograd's apply() takes defined tensors only, so the bias-free form is an
// overload of forward() with one input fewer.
struct LinearFunction : torch::autograd::Function<LinearFunction> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w) {
    return forward(ctx, x, w, Tensor());
  }
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["bias"] = b.defined();
    return linear_forward(x, w, b);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor& x = saved[0];  // (M, K)
    const Tensor& w = saved[1];  // (N, K)
    const Tensor g = grads[0].contiguous();  // (M, N)
    const int64_t M = x.size(0), N = w.size(0), K = x.size(1);
    tensor_list out(ctx->saved_data["bias"].toBool() ? 3 : 2);
    KernelTeam team;
    if (ctx->needs_input_grad(0)) {  // g W: (M, N) (N, K)
      out[0] = detail::empty_pooled({M, K});
      sgemm(false, false, M, K, N, 1.0f, matrix(g), matrix(w), 0.0f, out[0].data_ptr<float>(), K);
    }
    if (ctx->needs_input_grad(1)) {  // g^T x: (N, M) (M, K)
      out[1] = detail::empty_pooled({N, K});
      sgemm(true, false, N, K, M, 1.0f, matrix(g), matrix(x), 0.0f, out[1].data_ptr<float>(), K);
    }
    if (out.size() == 3 && ctx->needs_input_grad(2)) out[2] = g.sum(0);
    return out;
  }
};

bool onednn_can_take(const Tensor& x, const Tensor& w, const Tensor& b) {
  using detail::onednn_takes;
  return x.dim() >= 1 && w.dim() == 2 && onednn_takes(x) && onednn_takes(w) &&
         (!b.defined() || (onednn_takes(b) && b.dim() == 1)) && x.size(-1) == w.size(1) &&
         (!b.defined() || b.size(0) == w.size(0));
}
#endif

}  // namespace

#ifdef GPT2_WITH_ONEDNN
bool detail::widen_b(bool trans_a, bool trans_b, int64_t rows, int64_t cols, int64_t ld) {
  constexpr int64_t kAliasStride = 1024;             // floats: 4 KiB
  constexpr int64_t kSmallBytes = int64_t{1} << 20;  // stays in L2 however it is walked
  if (trans_a || ld % kAliasStride != 0 || rows * cols * 4 < kSmallBytes) return false;
  return !trans_b || onednn_runs_avx512();
}

bool detail::onednn_runs_avx512() {
  // oneDNN fixes its ISA (DNNL_MAX_CPU_ISA included) at its first use.
  static const bool avx512 = [] {
    const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
    const auto core = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
    return (isa & core) == core;
  }();
  return avx512;
}

void detail::sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                   Matrix a, Matrix b, float beta, float* c, int64_t ldc) {
  if (!trans_a && trans_b && alpha == 1.0f && (beta == 0.0f || beta == 1.0f) &&
      matmul_nt(M, N, K, a, b, beta == 1.0f, c, ldc)) {
    return;  // x W^T on oneDNN's brgemm kernels (onednn_matmul.cpp)
  }
  // A row stride that is a multiple of 4 KiB puts every row of B in the same
  // cache sets. oneDNN's kernels ran mlp.c_proj's products with its 768 x
  // 3072 weight as B at up to half speed (docs/speed.md): the input gradient
  // (B untransposed) on AVX2 and AVX-512, the forward (B transposed) on
  // AVX-512. Copying B to rows one cache line longer costs a fraction of
  // what it saves there; elsewhere B is read as it is.
  const int64_t b_rows = trans_b ? N : K, b_cols = trans_b ? K : N;
  Tensor wide;
  if (widen_b(trans_a, trans_b, b_rows, b_cols, b.ld)) {
    constexpr int64_t kPad = 16;  // floats: one cache line
    const int64_t ld = b_cols + kPad;
    wide = empty_pooled({b_rows, ld});
    float* dst = wide.data_ptr<float>();
    const Matrix src = b;
    at::parallel_for(0, b_rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        std::memcpy(dst + r * ld, src.data + r * src.ld, sizeof(float) * b_cols);
      }
    });
    b = {dst, ld};
  }
  const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K,
                                          alpha, a.data, a.ld, b.data, b.ld, beta, c, ldc);
  TORCH_CHECK(status == dnnl_success, "oneDNN sgemm failed with status ", int(status), " for M ",
              M, " N ", N, " K ", K);
}
#else
bool detail::widen_b(bool, bool, int64_t, int64_t, int64_t) { return false; }
bool detail::onednn_runs_avx512() { return false; }

void detail::sgemm(bool, bool, int64_t, int64_t, int64_t, float, Matrix, Matrix, float, float*,
                   int64_t) {
  throw Error("oneDNN sgemm called in a build without oneDNN");  // onednn_takes() is false there
}
#endif

bool detail::onednn_takes(const at::Tensor& t) {
  return current() == MatmulBackend::kOneDnn && t.numel() > 0 && t.device().is_cpu() &&
         t.scalar_type() == torch::kFloat && t.layout() == torch::kStrided;
}

KernelTeam::KernelTeam() {
  if (at::in_parallel_region()) return;
  // at::get_num_threads() first: torch sets a thread's count at its first
  // call, which must not happen inside this scope.
  const int want = kernel_threads(), now = at::get_num_threads();
  if (want == now) return;
  saved_ = now;
  omp_set_num_threads(want);
}

KernelTeam::~KernelTeam() {
  if (saved_ > 0) omp_set_num_threads(saved_);
}

MatmulBackend matmul_backend() { return current(); }

BackendChoice matmul_backend_choice() {
  const int f = forced.load();
  if (f == kUnset) return rule();
  return {static_cast<MatmulBackend>(f), "set by set_matmul_backend", true};
}

BackendChoice choose_matmul_backend() {
  if (!onednn_available()) return {MatmulBackend::kTorch, "this build has no oneDNN"};
  // Which of oneDNN's kernels the forward's x W^T runs on (sgemm.h).
  const std::string forward =
      detail::onednn_runs_avx512() ? "; x W^T on oneDNN's brgemm matmul (AVX-512)" : "";
  using GetCore = char* (*)();
  auto corename = reinterpret_cast<GetCore>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (!corename) return {MatmulBackend::kOneDnn, "the system BLAS is not OpenBLAS" + forward};
  const std::string core = corename();
  if (is_generic_openblas_core(core)) {
    return {MatmulBackend::kOneDnn, "OpenBLAS runs its generic " + core + " kernels" + forward};
  }
  return {MatmulBackend::kOneDnn, "OpenBLAS " + core + " kernels; oneDNN ran the model's products "
                                 "faster on every CPU measured (docs/speed.md)" + forward};
}

bool is_generic_openblas_core(const std::string& core) {
  for (const char* name : {"Prescott", "Core2", "Nehalem", "Penryn", "Dunnington", "Atom"}) {
    if (core == name) return true;
  }
  return false;
}

int usable_cores() {
  if (const char* omp = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(omp);
    if (n > 0) return n;
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const int cores = ::sched_getaffinity(0, sizeof allowed, &allowed) == 0
                        ? CPU_COUNT(&allowed)
                        : static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores);
}

int kernel_threads() {
  const int n = kernel_thread_count.load(std::memory_order_relaxed);
  if (n > 0) return n;
  static const int cores = usable_cores();
  return cores;
}

void set_kernel_threads(int threads) {
  if (threads < 0) throw Error("kernel threads must be 0 (the usable cores) or more, got " +
                               std::to_string(threads));
  kernel_thread_count.store(threads);
}

bool onednn_available() {
#ifdef GPT2_WITH_ONEDNN
  return true;
#else
  return false;
#endif
}

void set_matmul_backend(MatmulBackend choice) {
  if (choice == MatmulBackend::kOneDnn && !onednn_available()) {
    throw Error("matmul backend onednn: this build of gpt2 has no oneDNN (GPT2_WITH_ONEDNN off)");
  }
  forced.store(static_cast<int>(choice));
}

void reset_matmul_backend() { forced.store(kUnset); }


bool cpu::sgemm_linear_applies(const Tensor& x, const Tensor& weight, const Tensor& bias) {
#ifdef GPT2_WITH_ONEDNN
  return onednn_can_take(x, weight, bias);
#else
  (void)x, (void)weight, (void)bias;
  return false;
#endif
}

Tensor cpu::sgemm_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
#ifdef GPT2_WITH_ONEDNN
  {
    auto sizes = x.sizes().vec();
    sizes.back() = weight.size(0);
    const Tensor x2 = rows(x.reshape({-1, x.size(-1)}));           // (M, in)
    const Tensor w = rows(weight);                                 // (out, in)
    const Tensor y = bias.defined() ? LinearFunction::apply(x2, w, bias)
                                    : LinearFunction::apply(x2, w);  // (M, out)
    return y.view(sizes);                                            // (*, out)
  }
#endif
  return torch::nn::functional::linear(x, weight, bias);  // never reached where it applies
}

}  // namespace gpt2
