// The loaders' passes over bytes on the kernel threads give what the
// one-thread calls give, for sizes and offsets on and off the 1 MiB pieces.
#include "gpt2/io/detail/on_threads.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "gpt2/file/read_file.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace gpt2 {
namespace {

TEST(OnThreads, Crc32AndCopyEqualZlibsAtEverySize) {
  const size_t mib = size_t{1} << 20;
  std::vector<unsigned char> bytes(3 * mib + mib / 2 + 7);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 2654435761u >> 13);
  for (const size_t n : {size_t{0}, size_t{1}, mib - 1, mib, mib + 1, 2 * mib, bytes.size()}) {
    const auto want = static_cast<uint32_t>(crc32(0L, bytes.data(), static_cast<uInt>(n)));
    EXPECT_EQ(detail::crc32_on_threads(bytes.data(), n), want) << n;
    std::vector<unsigned char> copy(n + 1, 0xAB);
    EXPECT_EQ(detail::crc32_on_threads(bytes.data(), n, copy.data()), want) << n;
    EXPECT_EQ(std::memcmp(copy.data(), bytes.data(), n), 0) << n;
    EXPECT_EQ(copy[n], 0xAB) << "wrote past " << n;
    std::vector<unsigned char> plain(n + 1, 0xCD);
    detail::copy_on_threads(plain.data(), bytes.data(), n);
    EXPECT_EQ(std::memcmp(plain.data(), bytes.data(), n), 0) << n;
    EXPECT_EQ(plain[n], 0xCD) << "wrote past " << n;
  }
  // One flipped bit in the last piece changes the combined CRC-32.
  const uint32_t whole = detail::crc32_on_threads(bytes.data(), bytes.size());
  bytes.back() ^= 1;
  EXPECT_NE(detail::crc32_on_threads(bytes.data(), bytes.size()), whole);
}

TEST(OnThreads, ReadGivesTheFilesBytesAtAnyOffsetWithTheirCrc32) {
  const size_t mib = size_t{1} << 20;
  std::string bytes(3 * mib + mib / 2 + 7, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 2654435761u >> 11);
  testing::TempDir dir;
  testing::write_file(dir / "f", bytes);
  const InputFile file(dir / "f");
  for (const size_t at : {size_t{0}, size_t{1}, mib - 1, mib + 3}) {
    for (const size_t n : {size_t{0}, size_t{1}, mib, 2 * mib + 5, bytes.size() - at}) {
      std::string got(n + 1, '\x5A');
      uint32_t crc = 0;
      ASSERT_EQ(detail::read_on_threads(file.fd(), at, got.data(), n, &crc), 0) << at << " " << n;
      EXPECT_EQ(got.compare(0, n, bytes, at, n), 0) << at << " " << n;
      EXPECT_EQ(got[n], '\x5A') << "wrote past " << n;
      const auto* from = reinterpret_cast<const Bytef*>(bytes.data() + at);
      EXPECT_EQ(crc, static_cast<uint32_t>(crc32(0L, from, static_cast<uInt>(n))))
          << at << " " << n;
    }
  }
  std::string past(2 * mib, '\0');
  EXPECT_EQ(detail::read_on_threads(file.fd(), bytes.size() - 10, past.data(), past.size()), -1)
      << "the file ends first";
  EXPECT_EQ(detail::read_on_threads(-1, 0, past.data(), 10), EBADF);
}

TEST(OnThreads, TransposeEqualsTorchsForEveryElementSizeAndShape) {
  torch::manual_seed(2);
  for (const auto& shape : std::vector<std::vector<int64_t>>{{1, 1}, {3, 130}, {130, 67}, {768, 2304}}) {
    const auto f = torch::randn(shape);
    for (const auto& t : {f, f.to(torch::kBFloat16), f.to(torch::kDouble)}) {
      const auto got = detail::transposed_on_threads(t);
      EXPECT_TRUE(got.is_contiguous());
      EXPECT_TRUE(torch::equal(got, t.t())) << shape[0] << "x" << shape[1] << " " << t.dtype();
    }
  }
  // A view that is not contiguous goes through torch.
  const auto base = torch::randn({6, 8});
  const auto view = base.narrow(1, 1, 5);
  EXPECT_TRUE(torch::equal(detail::transposed_on_threads(view), view.t()));
}

}  // namespace
}  // namespace gpt2
