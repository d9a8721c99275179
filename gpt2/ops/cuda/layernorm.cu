// LayerNorm, forward and backward, in the manner of llm.c's layernorm
// kernels: a warp per row, statistics in float32 whatever the types. What
// it fuses: under autocast torch runs layer_norm in float32, writes a
// float32 output, and the next product casts it to bf16 (a write, a read,
// a write); this writes the product's dtype at once, and its backward reads
// the bf16 gradient the product gives without casting it first. The
// parameter gradients are summed over rows in chunks, then over chunks, in
// a fixed order (no atomics), so a run repeats bit for bit.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "gpt2/ops/cuda/device_math.cuh"
#include "gpt2/ops/cuda/kernels.h"

namespace gpt2::ops::cuda {
namespace {

constexpr int kRowsPerBlock = 8;  // warps (rows) per block
constexpr int kCols = 32;         // the parameter sums: columns per block
constexpr int kLanes = 8;         //                     rows read at once per column

// out (rows, C) = normalized x * weight + bias; a warp per row.
template <class In, class Out>
__global__ void layernorm_forward_kernel(Out* __restrict__ out, float* __restrict__ mean,
                                         float* __restrict__ rstd, const In* __restrict__ x,
                                         const float* __restrict__ weight,
                                         const float* __restrict__ bias, int64_t rows, int C,
                                         float eps) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (row >= rows) return;  // the whole warp: a row is a warp's
  const In* xr = x + row * C;
  float sum = 0.f;
  for (int i = lane; i < C; i += kWarp) sum += to_float(xr[i]);
  const float m = warp_sum(sum) / C;
  float squares = 0.f;
  for (int i = lane; i < C; i += kWarp) {
    const float d = to_float(xr[i]) - m;
    squares += d * d;
  }
  const float s = rsqrtf(warp_sum(squares) / C + eps);
  Out* o = out + row * C;
  for (int i = lane; i < C; i += kWarp) {
    const float n = (to_float(xr[i]) - m) * s;
    o[i] = from_float<Out>(n * weight[i] + (bias ? bias[i] : 0.f));
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * weight; a
// warp per row.
template <class In, class Grad>
__global__ void layernorm_backward_dx_kernel(In* __restrict__ dx, const Grad* __restrict__ dout,
                                             const In* __restrict__ x,
                                             const float* __restrict__ weight,
                                             const float* __restrict__ mean,
                                             const float* __restrict__ rstd, int64_t rows, int C) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (row >= rows) return;
  const In* xr = x + row * C;
  const Grad* gr = dout + row * C;
  const float m = mean[row], s = rstd[row];
  float g_sum = 0.f, gx_sum = 0.f;
  for (int i = lane; i < C; i += kWarp) {
    const float g = to_float(gr[i]) * weight[i];
    g_sum += g;
    gx_sum += g * (to_float(xr[i]) - m) * s;
  }
  const float g_mean = warp_sum(g_sum) / C, gx_mean = warp_sum(gx_sum) / C;
  In* d = dx + row * C;
  for (int i = lane; i < C; i += kWarp) {
    const float g = to_float(gr[i]) * weight[i];
    const float xhat = (to_float(xr[i]) - m) * s;
    d[i] = from_float<In>(s * (g - g_mean - xhat * gx_mean));
  }
}

// partial[0][chunk][c] = sum of dout * xhat and partial[1][chunk][c] = sum of
// dout over the chunk's rows; a block per (32 columns, chunk), its threads
// reading a row's 32 columns at once.
template <class In, class Grad>
__global__ void layernorm_backward_partial_kernel(float* __restrict__ partial,
                                                  const Grad* __restrict__ dout,
                                                  const In* __restrict__ x,
                                                  const float* __restrict__ mean,
                                                  const float* __restrict__ rstd, int64_t rows,
                                                  int C, int64_t chunk_rows, int64_t chunks) {
  __shared__ float sums[2][kLanes][kCols];
  const int c = static_cast<int>(blockIdx.x) * kCols + static_cast<int>(threadIdx.x);
  const int64_t first = static_cast<int64_t>(blockIdx.y) * chunk_rows;
  const int64_t last = first + chunk_rows < rows ? first + chunk_rows : rows;
  float dw = 0.f, db = 0.f;
  if (c < C) {
    for (int64_t r = first + threadIdx.y; r < last; r += kLanes) {
      const float g = to_float(dout[r * C + c]);
      dw += g * (to_float(x[r * C + c]) - mean[r]) * rstd[r];
      db += g;
    }
  }
  sums[0][threadIdx.y][threadIdx.x] = dw;
  sums[1][threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float w = 0.f, b = 0.f;
    for (int y = 0; y < kLanes; ++y) {
      w += sums[0][y][threadIdx.x];
      b += sums[1][y][threadIdx.x];
    }
    partial[blockIdx.y * static_cast<int64_t>(C) + c] = w;
    partial[(chunks + blockIdx.y) * static_cast<int64_t>(C) + c] = b;
  }
}

// dweight[c], dbias[c]: the chunks' partial sums, in chunk order.
__global__ void layernorm_backward_sum_kernel(float* __restrict__ dweight, float* __restrict__ dbias,
                                              const float* __restrict__ partial, int64_t chunks,
                                              int C) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= C) return;
  float w = 0.f, b = 0.f;
  for (int64_t k = 0; k < chunks; ++k) {
    w += partial[k * C + c];
    b += partial[(chunks + k) * C + c];
  }
  dweight[c] = w;
  if (dbias) dbias[c] = b;
}

int64_t chunk_rows_of(int64_t rows) {
  // 256 rows a chunk, but no more than 4096 chunks (the grid's y is < 65536).
  return std::max<int64_t>(256, (rows + 4095) / 4096);
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

}  // namespace

cudaError_t layernorm_forward(void* out, DType out_type, float* mean, float* rstd, const void* x,
                              DType x_type, const float* weight, const float* bias, int64_t rows,
                              int C, float eps, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  with_type(x_type, [&](auto* in_tag) {
    using In = std::remove_pointer_t<decltype(in_tag)>;
    with_type(out_type, [&](auto* out_tag) {
      using Out = std::remove_pointer_t<decltype(out_tag)>;
      layernorm_forward_kernel<In, Out><<<row_blocks(rows), kRowsPerBlock * kWarp, 0, stream>>>(
          static_cast<Out*>(out), mean, rstd, static_cast<const In*>(x), weight, bias, rows, C,
          eps);
    });
  });
  return cudaGetLastError();
}

int64_t layernorm_backward_chunks(int64_t rows) {
  return std::max<int64_t>(1, (rows + chunk_rows_of(rows) - 1) / chunk_rows_of(rows));
}

cudaError_t layernorm_backward(void* dx, const void* dout, DType dout_type, const void* x,
                               DType x_type, const float* weight, const float* mean,
                               const float* rstd, float* dweight, float* dbias, float* partial,
                               int64_t rows, int C, cudaStream_t stream) {
  const int64_t chunk_rows = chunk_rows_of(rows), chunks = layernorm_backward_chunks(rows);
  with_type(x_type, [&](auto* in_tag) {
    using In = std::remove_pointer_t<decltype(in_tag)>;
    with_type(dout_type, [&](auto* grad_tag) {
      using Grad = std::remove_pointer_t<decltype(grad_tag)>;
      if (rows > 0) {
        layernorm_backward_dx_kernel<In, Grad>
            <<<row_blocks(rows), kRowsPerBlock * kWarp, 0, stream>>>(
                static_cast<In*>(dx), static_cast<const Grad*>(dout), static_cast<const In*>(x),
                weight, mean, rstd, rows, C);
      }
      const dim3 grid(static_cast<unsigned>((C + kCols - 1) / kCols), static_cast<unsigned>(chunks));
      layernorm_backward_partial_kernel<In, Grad><<<grid, dim3(kCols, kLanes), 0, stream>>>(
          partial, static_cast<const Grad*>(dout), static_cast<const In*>(x), mean, rstd, rows, C,
          chunk_rows, chunks);
    });
  });
  layernorm_backward_sum_kernel<<<static_cast<unsigned>((C + 255) / 256), 256, 0, stream>>>(
      dweight, dbias, partial, chunks, C);
  return cudaGetLastError();
}

}  // namespace gpt2::ops::cuda
