#include "gpt2/io/detail/on_threads.h"

#include <ATen/ops/empty.h>
#include <libdeflate.h>
#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "gpt2/ops/memory.h"
#include "gpt2/ops/settings.h"

#ifndef _OPENMP
#error "build this file with -fopenmp: without it the pieces run on one thread (gpt2/CMakeLists.txt)"
#endif

namespace gpt2::detail {
namespace {

constexpr size_t kPiece = size_t{1} << 20;

// f(index, begin, length) for each piece of [0, n), on the kernel threads.
template <class F>
void each_piece(size_t n, const F& f) {
  const auto pieces = static_cast<int64_t>((n + kPiece - 1) / kPiece);
  const int threads = kernel_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (pieces > 1)
  for (int64_t i = 0; i < pieces; ++i) {
    const size_t begin = static_cast<size_t>(i) * kPiece;
    f(static_cast<size_t>(i), begin, std::min(kPiece, n - begin));
  }
}

// out (cols, rows) = in (rows, cols)^T, in tiles of kTile x kTile.
template <class T>
void transpose_tiles(const T* in, T* out, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 64;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const int threads = kernel_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (rows * cols > (1 << 18))
  for (int64_t rt = 0; rt < row_tiles; ++rt) {
    const int64_t r0 = rt * kTile, r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t r = r0; r < r1; ++r) out[c * rows + r] = in[r * cols + c];
      }
    }
  }
}

// The CRC-32 of n bytes from those of their kPiece-byte pieces, in order.
uint32_t combined(const std::vector<uint32_t>& crcs, size_t n) {
  uLong crc = crcs.empty() ? 0 : crcs[0];
  for (size_t i = 1; i < crcs.size(); ++i) {
    crc = crc32_combine(crc, crcs[i], static_cast<z_off_t>(std::min(kPiece, n - i * kPiece)));
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

at::Tensor transposed_on_threads(const at::Tensor& t) {
  if (t.dim() != 2 || !t.is_contiguous() || !t.device().is_cpu() ||
      (t.element_size() != 4 && t.element_size() != 2)) {
    return t.t().contiguous();
  }
  const int64_t rows = t.size(0), cols = t.size(1);
  at::Tensor out = empty_large({cols, rows}, t.scalar_type());
  if (t.element_size() == 4) {
    transpose_tiles(static_cast<const uint32_t*>(t.data_ptr()), static_cast<uint32_t*>(out.data_ptr()), rows, cols);
  } else {
    transpose_tiles(static_cast<const uint16_t*>(t.data_ptr()), static_cast<uint16_t*>(out.data_ptr()), rows, cols);
  }
  return out;
}

void copy_on_threads(void* to, const void* from, size_t n) {
  each_piece(n, [&](size_t, size_t begin, size_t length) {
    std::memcpy(static_cast<char*>(to) + begin, static_cast<const char*>(from) + begin, length);
  });
}

int read_on_threads(int fd, uint64_t offset, void* to, size_t n, uint32_t* crc) {
  std::atomic<int> status{0};
  std::vector<uint32_t> crcs(crc ? (n + kPiece - 1) / kPiece : 0);
  each_piece(n, [&](size_t i, size_t begin, size_t length) {
    char* const piece = static_cast<char*>(to) + begin;
    for (size_t done = 0; done < length && status.load(std::memory_order_relaxed) == 0;) {
      const ssize_t got = ::pread(fd, piece + done, length - done,
                                  static_cast<off_t>(offset + begin + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        int none = 0;
        status.compare_exchange_strong(none, got < 0 ? errno : -1);
        return;
      }
      done += static_cast<size_t>(got);
    }
    if (crc) crcs[i] = static_cast<uint32_t>(libdeflate_crc32(0, piece, length));
  });
  if (crc) *crc = combined(crcs, n);
  return status.load();
}

uint32_t crc32_on_threads(const void* data, size_t n, void* copy_to) {
  const auto* from = static_cast<const char*>(data);
  auto* to = static_cast<char*>(copy_to);
  const size_t pieces = (n + kPiece - 1) / kPiece;
  std::vector<uint32_t> crcs(pieces);
  each_piece(n, [&](size_t i, size_t begin, size_t length) {
    const char* piece = from + begin;
    if (to) {
      std::memcpy(to + begin, piece, length);
      piece = to + begin;
    }
    crcs[i] = static_cast<uint32_t>(libdeflate_crc32(0, piece, length));
  });
  return combined(crcs, n);
}

}  // namespace gpt2::detail
