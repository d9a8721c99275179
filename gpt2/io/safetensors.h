#pragma once
/// The safetensors format (Hugging Face), read and written to its rules:
/// an 8-byte little-endian header length N (at most 100,000,000), N bytes
/// of JSON beginning with `{` (trailing spaces allowed), then the data
/// section. Each entry has `dtype`, `shape` and `data_offsets` [begin, end)
/// relative to the data section; sorted by offset the entries cover it
/// exactly, and the file ends at the last end. `__metadata__` is a
/// string-to-string map. This layer knows nothing of GPT-2's names; see
/// hf_gpt2.h for those.

#include <torch/types.h>

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpt2 {

/// The header length the reader accepts at most, as the format's own reader.
constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;
/// The tensors the reader accepts at most: GPT-2 at the deepest config this
/// library builds (GPTConfig::kMaxLayers, 12 tensors a layer) has about
/// 12,300. A bound, so a small header of empty entries cannot cost minutes.
constexpr uint64_t kSafetensorsMaxTensors = 65'536;

/// A safetensors file's contents, tensors copied out of the file.
struct SafetensorsContents {
  /// Tensors in data order, dtype as stored (float32, float16 or bfloat16).
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  /// The `__metadata__` map (empty when absent).
  std::map<std::string, std::string> metadata;
};

/// Parses a whole safetensors file held in `bytes`. Every size is checked
/// against `bytes` before it is used. Throws FormatError naming `source` and
/// the rule broken; dtypes other than F32, F16 and BF16 are an error naming
/// the tensor and the dtype.
SafetensorsContents parse_safetensors(std::string_view bytes, const std::string& source);

/// Maps `path` and parses it (parse_safetensors). FileError if it cannot be read.
SafetensorsContents read_safetensors(const std::string& path);

/// The bytes of a safetensors file holding `contents` (tensors in the given
/// order, float32, float16 or bfloat16), header padded with spaces to a
/// multiple of 8 bytes. Tensors on another device are written from CPU
/// copies; one whose values cannot be read (the meta device) is a
/// FileError naming it and `file`.
std::string safetensors_bytes(const SafetensorsContents& contents,
                              const std::string& file = "a safetensors file");

/// Writes safetensors_bytes(contents) to `path` atomically (write_atomically).
void write_safetensors(const std::string& path, const SafetensorsContents& contents);

}  // namespace gpt2
