#pragma once
/// Shared by the gpt2::text tests: one loaded tokenizer and the test files.

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gpt2/text/tokenizer.h"

namespace gpt2::test {

/// GPT-2's tokenizer, loaded once for the whole test binary.
inline const Tokenizer& gpt2_tokenizer() {
  static const Tokenizer tokenizer = Tokenizer::from_dir(GPT2_TEXT_BPE_DIR);
  return tokenizer;
}

/// This folder in the source tree (golden.json, data/).
inline std::filesystem::path test_dir() { return GPT2_TEXT_TEST_DIR; }

/// The checked-in encoder.json, vocab.bpe and NOTICE.
inline std::filesystem::path bpe_dir() { return GPT2_TEXT_BPE_DIR; }

/// Every byte of the file at `path` ("" if it cannot be opened).
inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

}  // namespace gpt2::test
