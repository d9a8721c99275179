#include "gpt2/text/detail/bpe_files.h"

#include <openssl/evp.h>

#include <cstdint>

#include "gpt2/error.h"
#include "gpt2/file/read_file.h"

namespace gpt2 {
namespace bpe {
namespace {

// encoder.json is about 1 MB and vocab.bpe 0.5 MB; anything far larger is
// not GPT-2's, and is refused before it is read.
constexpr uint64_t kMaxBpeFileBytes = 64u << 20;

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(),
                 nullptr) != 1) {
    throw Error("OpenSSL could not compute a sha256 digest");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xF]);
  }
  return hex;
}

std::string read_checked(const std::filesystem::path& path,
                         std::string_view role, std::string_view expected) {
  std::string content = gpt2::read_file(path.string(), "GPT-2 BPE file", kMaxBpeFileBytes);
  const std::string actual = sha256_hex(content);
  if (actual != expected) {
    throw FileError("GPT-2 BPE file " + path.string() + " has sha256 " +
                    actual + " but GPT-2's " + std::string(role) +
                    " has sha256 " + std::string(expected) +
                    " (see NOTICE); the file is damaged or not GPT-2's");
  }
  return content;
}

std::filesystem::path first_bpe_dir(
    const std::vector<std::pair<std::string, std::filesystem::path>>&
        candidates) {
  std::ostringstream tried;
  for (const auto& [label, dir] : candidates) {
    std::error_code ec;
    const bool complete =
        std::filesystem::is_regular_file(dir / kEncoderJsonName, ec) &&
        std::filesystem::is_regular_file(dir / kVocabBpeName, ec);
    if (complete) return dir;
    tried << "\n  " << label << ": " << dir.string();
  }
  throw FileError(
      "no directory holds both GPT-2 BPE files (" +
      std::string(kEncoderJsonName) + ", " + std::string(kVocabBpeName) +
      "); tried:" + (candidates.empty() ? "\n  (nothing)" : tried.str()) +
      "\nset GPT2_BPE_DIR to a directory that holds them");
}

}  // namespace bpe
}  // namespace gpt2
