#include "gpt2/io/checksum.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>

namespace gpt2 {

uint32_t tensor_crc32(const torch::Tensor& tensor) {
  const torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
  const auto* p = static_cast<const Bytef*>(t.data_ptr());
  size_t left = t.nbytes();
  uLong crc = crc32(0L, Z_NULL, 0);
  while (left > 0) {  // zlib's length is a uInt
    const auto n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = crc32(crc, p, n);
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(crc);
}

std::vector<std::string> checksum_problems(const StateDict& tensors,
                                           const std::map<std::string, int64_t>& stored) {
  std::vector<std::string> out;
  for (const auto& [name, tensor] : tensors) {
    auto found = stored.find(name);
    if (found == stored.end()) {
      out.push_back(fmt::format("no checksum stored for {}", name));
      continue;
    }
    const uint32_t actual = tensor_crc32(tensor);
    if (found->second != static_cast<int64_t>(actual)) {
      out.push_back(fmt::format("checksum mismatch for {}: stored crc32 {:#010x}, data {:#010x}",
                                name, found->second, actual));
    }
  }
  return out;
}

}  // namespace gpt2
