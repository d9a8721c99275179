#include "gpt2/io/checksum.h"

#include <fmt/format.h>

#include "gpt2/io/detail/host_tensor.h"
#include "gpt2/io/detail/on_threads.h"

namespace gpt2 {

uint32_t tensor_crc32(const torch::Tensor& tensor, const std::string& what) {
  const torch::Tensor host = detail::host_tensor(tensor, what);  // alive while its bytes are read
  const std::string_view bytes = detail::host_bytes(host);
  return detail::crc32_on_threads(bytes.data(), bytes.size());
}

std::vector<std::string> checksum_problems(const StateDict& tensors,
                                           const std::map<std::string, int64_t>& stored,
                                           const std::map<std::string, uint32_t>& taken) {
  std::vector<std::string> out;
  for (const auto& [name, tensor] : tensors) {
    auto found = stored.find(name);
    if (found == stored.end()) {
      out.push_back(fmt::format("no checksum stored for {}", name));
      continue;
    }
    const auto known = taken.find(name);
    const uint32_t actual = known != taken.end() ? known->second : tensor_crc32(tensor, name);
    if (found->second != static_cast<int64_t>(actual)) {
      out.push_back(fmt::format("checksum mismatch for {}: stored crc32 {:#010x}, data {:#010x}",
                                name, found->second, actual));
    }
  }
  return out;
}

}  // namespace gpt2
