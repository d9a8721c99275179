// The forward's products, x W^T, through oneDNN's matmul primitive where
// oneDNN runs it on its brgemm kernels (sgemm.h, detail::matmul_nt).
//
// oneDNN's sgemm reads a transposed B more slowly than an untransposed one,
// so the forward's x W^T ran slower than the backward's g W of the same
// sizes. The matmul primitive, given the same row-major operands, picks its
// brgemm kernels on AVX-512 ("brg:avx512_core"), which copy B into blocks
// as they go and run those products faster (docs/cpu-kernels.md has the
// figures). Elsewhere (AVX2, or an ISA limit) it picks the same gemm as
// sgemm, and the caller keeps sgemm. A primitive takes a fraction of a
// millisecond to make, so each shape's is kept.

#include "gpt2/ops/cpu/sgemm.h"

#ifdef GPT2_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

namespace gpt2::detail {
namespace {

// Rows of x below which sgemm stays (`gpt2 bench products` times both on
// the model's shapes): up to 8 rows sgemm's matrix-vector kernels won, from
// 16 the primitive won on every weight of the 124M model; on the
// vocabulary-sized head it won from 4 rows, not at 2.
constexpr int64_t kMinRows = 16;
constexpr int64_t kMinRowsWideB = 4;
constexpr int64_t kWideB = int64_t{1} << 24;  // N * K: the 124M head's 38.6M
// Shapes kept; past it the cache starts again (a server sees many M).
constexpr size_t kMaxKept = 256;

// M, N, K, lda, ldb, ldc, accumulate, threads: what the primitive is made for.
using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, int>;

struct Kept {
  std::unique_ptr<dnnl::matmul> primitive;  // null: oneDNN picks no brgemm here
  dnnl::matmul::primitive_desc desc;
};

const dnnl::engine& engine() {
  static const dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

std::shared_ptr<const Kept> make(const Key& key) {
  const auto [M, N, K, lda, ldb, ldc, accumulate, threads] = key;
  (void)threads;  // in the key: oneDNN sizes a primitive for the team it finds when made
  using dt = dnnl::memory::data_type;
  const dnnl::memory::desc a({M, K}, dt::f32, {lda, 1});
  const dnnl::memory::desc b({K, N}, dt::f32, {1, ldb});  // W (N, K) read as W^T
  const dnnl::memory::desc c({M, N}, dt::f32, {ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per call: threads may share it
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);  // C += A B^T, as sgemm's beta 1
    attr.set_post_ops(ops);
  }
  auto kept = std::make_shared<Kept>();
  try {
#if DNNL_VERSION_MAJOR >= 3  // oneDNN 3 dropped the operation descriptors
    kept->desc = dnnl::matmul::primitive_desc(engine(), a, b, c, attr);
#else
    kept->desc = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine());
#endif
  } catch (const dnnl::error&) {
    return kept;  // not implemented for these strides: sgemm
  }
  if (std::string(kept->desc.impl_info_str()).rfind("brg", 0) == 0) {
    kept->primitive = std::make_unique<dnnl::matmul>(kept->desc);
  }
  return kept;
}

// Made under the lock: a shape's first call waits for it once.
std::shared_ptr<const Kept> find(const Key& key) {
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const Kept>> kept;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = kept.find(key);
  if (it != kept.end()) return it->second;
  if (kept.size() >= kMaxKept) kept.clear();
  return kept.emplace(key, make(key)).first->second;
}

// The calling thread's scratchpad, grown as needed and kept (about 257 KB
// for the model's shapes: allocated per call, glibc would map and unmap it).
void* scratchpad(size_t bytes) {
  constexpr size_t kAlign = 64;
  thread_local std::unique_ptr<void, void (*)(void*)> data{nullptr, std::free};
  thread_local size_t size = 0;
  if (bytes > size) {
    const size_t want = (bytes + kAlign - 1) / kAlign * kAlign;
    data.reset(std::aligned_alloc(kAlign, want));
    size = data ? want : 0;
    if (!data) throw std::bad_alloc();
  }
  return data.get();
}

}  // namespace

bool matmul_nt_takes(int64_t M, int64_t N, int64_t K) {
  return (M >= kMinRows || (M >= kMinRowsWideB && N * K >= kWideB)) && !omp_in_parallel();
}

bool matmul_nt(int64_t M, int64_t N, int64_t K, Matrix a, Matrix b, bool accumulate, float* c,
               int64_t ldc) {
  // Without AVX-512 oneDNN has no brgemm for float32: no shape is looked up.
  if (!matmul_nt_takes(M, N, K) || !onednn_runs_avx512()) return false;
  const auto kept = find({M, N, K, a.ld, b.ld, ldc, accumulate, omp_get_max_threads()});
  if (!kept->primitive) return false;
  const auto& desc = kept->desc;
  const dnnl::memory::desc scratch = desc.scratchpad_desc();
  const auto& cpu = engine();
  // oneDNN takes non-const handles; it reads A and B only.
  dnnl::memory am(desc.src_desc(), cpu, const_cast<float*>(a.data));
  dnnl::memory bm(desc.weights_desc(), cpu, const_cast<float*>(b.data));
  dnnl::memory cm(desc.dst_desc(), cpu, c);
  dnnl::memory sm(scratch, cpu, scratchpad(scratch.get_size()));
  thread_local dnnl::stream stream(cpu);
  kept->primitive->execute(stream, {{DNNL_ARG_SRC, am},
                                    {DNNL_ARG_WEIGHTS, bm},
                                    {DNNL_ARG_DST, cm},
                                    {DNNL_ARG_SCRATCHPAD, sm}});
  stream.wait();
  return true;
}

}  // namespace gpt2::detail

#else
namespace gpt2::detail {
bool matmul_nt_takes(int64_t, int64_t, int64_t) { return false; }
bool matmul_nt(int64_t, int64_t, int64_t, Matrix, Matrix, bool, float*, int64_t) { return false; }
}  // namespace gpt2::detail
#endif
