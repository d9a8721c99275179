#pragma once
/// Finding, reading and checking GPT-2's two BPE files (encoder.json,
/// vocab.bpe). Every failure is a gpt2::FileError that names the path.

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpt2::bpe {

/// File names inside a BPE directory.
inline constexpr std::string_view kEncoderJsonName = "encoder.json";
inline constexpr std::string_view kVocabBpeName = "vocab.bpe";

/// sha256 of the files OpenAI released; gpt2-bpe/NOTICE lists the same two.
inline constexpr std::string_view kEncoderJsonSha256 =
    "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783";
inline constexpr std::string_view kVocabBpeSha256 =
    "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5";

/// Lowercase hex sha256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

/// gpt2::read_file, then throws FileError naming the path, `role` (the GPT-2
/// file it stands for) and both hashes unless its sha256 is `expected`.
std::string read_checked(const std::filesystem::path& path,
                         std::string_view role, std::string_view expected);

/// The first of `candidates` (label, directory) that holds both files;
/// throws FileError listing every place tried when none does.
std::filesystem::path first_bpe_dir(
    const std::vector<std::pair<std::string, std::filesystem::path>>&
        candidates);

}  // namespace gpt2::bpe
