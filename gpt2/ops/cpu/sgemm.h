#pragma once
// oneDNN's float32 GEMM as the kernels call it (internal to gpt2/ops).
// Without GPT2_WITH_ONEDNN, onednn_takes() is always false and sgemm()
// throws.

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "gpt2/ops/settings.h"

namespace gpt2::detail {

/// A row-major matrix: element (i, j) at data[i * ld + j].
struct Matrix {
  const float* data;
  int64_t ld;
};

/// Row-major C (M, N) = alpha op(A) op(B) + beta C, where op transposes when
/// asked. Runs on the calling OpenMP team: all of torch's intra-op threads
/// outside a parallel region, one thread inside at::parallel_for (oneDNN
/// does not nest: inside a parallel region it counts one thread). A W^T
/// with alpha 1 and beta 0 or 1 goes to matmul_nt first.
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, Matrix a,
           Matrix b, float beta, float* c, int64_t ldc);

/// The forward's x W^T (A untransposed, B transposed, alpha 1) through
/// oneDNN's matmul primitive: C = A B^T, or C += A B^T when `accumulate`.
/// Runs when matmul_nt_takes(M, N, K) and oneDNN implements the shape with
/// its brgemm kernels (AVX-512), and returns true; otherwise does nothing
/// and returns false, for sgemm to run it. onednn_matmul.cpp says why.
bool matmul_nt(int64_t M, int64_t N, int64_t K, Matrix a, Matrix b, bool accumulate, float* c,
               int64_t ldc);
/// Whether matmul_nt tries the primitive for this size: 16 rows of A or
/// more (4 when N K is vocabulary-sized), outside an OpenMP parallel region.
bool matmul_nt_takes(int64_t M, int64_t N, int64_t K);

/// Whether oneDNN runs its AVX-512 kernels here (not under an ISA limit
/// such as DNNL_MAX_CPU_ISA=AVX2, nor in a build without oneDNN).
bool onednn_runs_avx512();

/// Whether sgemm copies B, `rows` x `cols` as stored, to rows one cache line
/// longer first: A untransposed, B of 1 MiB or more with a row stride that
/// is a multiple of 4 KiB, and B untransposed or oneDNN running AVX-512.
bool widen_b(bool trans_a, bool trans_b, int64_t rows, int64_t cols, int64_t ld);

/// Whether the onednn backend is chosen and `t` is a non-empty, strided
/// float32 CPU tensor.
bool onednn_takes(const at::Tensor& t);

}  // namespace gpt2::detail
