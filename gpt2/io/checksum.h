#pragma once
/// Integrity of tensor data: zlib's CRC-32 of each tensor's bytes, recorded
/// when a file is written and verified when it is read, so that a flipped
/// byte is an error naming the tensor rather than a silently different model.

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpt2/io/state_dict.h"

namespace gpt2 {

/// CRC-32 (zlib's crc32, the zip / PNG polynomial; libdeflate computes it) of `tensor`'s bytes in
/// row-major order, as a CPU tensor of its dtype holds them (a copy of a
/// tensor on another device). `what` names it in the FileError thrown where
/// its values cannot be read (the meta device).
uint32_t tensor_crc32(const torch::Tensor& tensor, const std::string& what = "a tensor");

/// One line per tensor of `tensors` whose CRC-32 differs from `stored` (by
/// name) or has none stored: `checksum mismatch for NAME: stored 0x..., data 0x...`.
/// `taken` holds CRC-32s a reader already took of exactly a tensor's bytes
/// (a checkpoint's whole-record tensors, read and checked in one pass);
/// the others are computed here.
std::vector<std::string> checksum_problems(const StateDict& tensors,
                                           const std::map<std::string, int64_t>& stored,
                                           const std::map<std::string, uint32_t>& taken = {});

}  // namespace gpt2
