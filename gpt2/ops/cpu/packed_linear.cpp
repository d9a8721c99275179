// The weight-only product for decoding (packed_linear.h says why it is ours).
#include "gpt2/ops/cpu/packed_linear.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>

// GCC 12's AVX-512 headers pass an undefined vector as the unused operand of
// their masked builtins, which -Wuninitialized reports wherever they inline
// (GCC bug 105593, fixed in 13): silenced for this file only.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "gpt2/error.h"
#include "gpt2/ops/memory.h"
#include "gpt2/ops/cpu/sgemm.h"

#ifndef _OPENMP
#error "build this file with -fopenmp: without it at::parallel_for runs on one thread (gpt2/CMakeLists.txt)"
#endif

namespace gpt2::cpu {
namespace {

// One output: the dot product of a float32 row with a packed weight row,
// in three builds picked once at run time: AVX-512, AVX2 + FMA (intrinsics:
// GCC 12 vectorized the plain loop with 128-bit registers only) and a plain
// loop for the rest. Two accumulators hide the FMA latency.
using Dot = float (*)(const float* x, const void* w, int64_t k);

float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;  // bfloat16 is float32's top half
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

float dot_int8_plain(const float* x, const void* w, int64_t k) {
  const auto* q = static_cast<const int8_t*>(w);
  float sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += x[i] * static_cast<float>(q[i]);
  return sum;
}

float dot_bf16_plain(const float* x, const void* w, int64_t k) {
  const auto* h = static_cast<const uint16_t*>(w);
  float sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += x[i] * bf16_to_float(h[i]);
  return sum;
}

__attribute__((target("avx512f"))) float dot_int8_avx512(const float* x, const void* w,
                                                        int64_t k) {
  const auto* q = static_cast<const int8_t*>(w);
  __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    const __m512 w0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
        reinterpret_cast<const __m128i*>(q + i))));
    const __m512 w1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
        reinterpret_cast<const __m128i*>(q + i + 16))));
    a = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), w0, a);
    b = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), w1, b);
  }
  float sum = _mm512_reduce_add_ps(_mm512_add_ps(a, b));
  for (; i < k; ++i) sum += x[i] * static_cast<float>(q[i]);
  return sum;
}

__attribute__((target("avx512f"))) float dot_bf16_avx512(const float* x, const void* w,
                                                        int64_t k) {
  const auto* h = static_cast<const uint16_t*>(w);
  __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    const __m512i u0 = _mm512_cvtepu16_epi32(_mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(h + i)));
    const __m512i u1 = _mm512_cvtepu16_epi32(_mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(h + i + 16)));
    a = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_castsi512_ps(_mm512_slli_epi32(u0, 16)), a);
    b = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_castsi512_ps(_mm512_slli_epi32(u1, 16)),
                        b);
  }
  float sum = _mm512_reduce_add_ps(_mm512_add_ps(a, b));
  for (; i < k; ++i) sum += x[i] * bf16_to_float(h[i]);
  return sum;
}

__attribute__((target("avx2,fma"))) inline float hsum256(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

__attribute__((target("avx2,fma"))) float dot_int8_avx2(const float* x, const void* w, int64_t k) {
  const auto* q = static_cast<const int8_t*>(w);
  __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m256 w0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(
        reinterpret_cast<const __m128i*>(q + i))));
    const __m256 w1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(
        reinterpret_cast<const __m128i*>(q + i + 8))));
    a = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), w0, a);
    b = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), w1, b);
  }
  float sum = hsum256(_mm256_add_ps(a, b));
  for (; i < k; ++i) sum += x[i] * static_cast<float>(q[i]);
  return sum;
}

__attribute__((target("avx2,fma"))) float dot_bf16_avx2(const float* x, const void* w, int64_t k) {
  const auto* h = static_cast<const uint16_t*>(w);
  __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m256i u0 = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
    const __m256i u1 =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i + 8)));
    a = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_castsi256_ps(_mm256_slli_epi32(u0, 16)), a);
    b = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_castsi256_ps(_mm256_slli_epi32(u1, 16)),
                        b);
  }
  float sum = hsum256(_mm256_add_ps(a, b));
  for (; i < k; ++i) sum += x[i] * bf16_to_float(h[i]);
  return sum;
}

// The build for this CPU, chosen once.
Dot dot_for(WeightFormat format) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (format == WeightFormat::kInt8) {
    return avx512 ? dot_int8_avx512 : avx2 ? dot_int8_avx2 : dot_int8_plain;
  }
  return avx512 ? dot_bf16_avx512 : avx2 ? dot_bf16_avx2 : dot_bf16_plain;
}

}  // namespace

int64_t PackedWeight::bytes() const {
  return static_cast<int64_t>(data.nbytes() + (scale.defined() ? scale.nbytes() : 0));
}

PackedWeight pack_weight(const torch::Tensor& weight, WeightFormat format) {
  if (format == WeightFormat::kFloat32 || weight.dim() != 2 ||
      weight.scalar_type() != torch::kFloat || !weight.device().is_cpu()) {
    throw Error(fmt::format("pack_weight takes a 2-D float32 CPU weight and bf16 or int8, got "
                            "{}-D {} on {} and {}", weight.dim(), c10::toString(weight.scalar_type()),
                            weight.device().str(), to_string(format)));
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor w = weight.detach().contiguous();
  PackedWeight p;
  p.format = format;
  if (format == WeightFormat::kBFloat16) {
    // copy_ converts as to() does: torch rounds to nearest even.
    p.data = empty_large(w.sizes(), torch::kBFloat16).copy_(w);
    return p;
  }
  // A row of zeros gets scale 1 (its q are 0 either way).
  const torch::Tensor amax = w.abs().amax(1);
  p.scale = torch::where(amax > 0, amax / 127.0, torch::ones_like(amax)).contiguous();
  p.data = empty_large(w.sizes(), torch::kInt8)
               .copy_((w / p.scale.unsqueeze(1)).round().clamp(-127, 127));
  return p;
}

torch::Tensor packed_linear(const torch::Tensor& x, const PackedWeight& weight,
                            const torch::Tensor& bias) {
  const int64_t n = weight.data.size(0), k = weight.data.size(1);
  TORCH_CHECK(x.scalar_type() == torch::kFloat && x.device().is_cpu() && x.size(-1) == k,
              "packed_linear takes float32 CPU x (*, ", k, "), got ", x.sizes(), " ",
              x.scalar_type());
  const torch::Tensor rows = x.reshape({-1, k}).contiguous();  // (M, in)
  const int64_t m = rows.size(0);
  auto sizes = x.sizes().vec();
  sizes.back() = n;
  torch::Tensor y = torch::empty({m, n}, x.options());
  const float* xs = rows.data_ptr<float>();
  float* ys = y.data_ptr<float>();
  const torch::Tensor bias_rows = bias.defined() ? bias.contiguous() : torch::Tensor();
  const float* b = bias_rows.defined() ? bias_rows.data_ptr<float>() : nullptr;
  const bool int8 = weight.format == WeightFormat::kInt8;
  const auto* packed = static_cast<const char*>(weight.data.data_ptr());
  const int64_t row_bytes = k * (int8 ? 1 : 2);
  const float* scale = int8 ? weight.scale.data_ptr<float>() : nullptr;
  const Dot dot = dot_for(weight.format);
  KernelTeam team;
  // Each weight row is read once, for every input row.
  at::parallel_for(0, n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      for (int64_t r = 0; r < m; ++r) {
        const float* xr = xs + r * k;
        const float v = dot(xr, packed + o * row_bytes, k);
        ys[r * n + o] = (int8 ? scale[o] * v : v) + (b ? b[o] : 0.0f);
      }
    }
  });
  return y.view(sizes);
}

}  // namespace gpt2::cpu
