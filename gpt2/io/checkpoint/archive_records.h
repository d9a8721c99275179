#pragma once
// The checkpoint gate's rules for single records, by name
// (torch_archive.cpp applies them to a whole archive).

#include <optional>
#include <string>
#include <string_view>

namespace gpt2::detail {

/// The records every archive of this LibTorch has with fixed bytes
/// (constants.pkl, the .debug_pkl of a class without methods), taken once
/// from an archive LibTorch writes here, so they are what this library's
/// writer emits.
struct ReferenceRecords {
  std::string constants, debug_pkl;
};
const ReferenceRecords& reference();

/// 1 to `max_digits` decimal digits.
bool all_digits(std::string_view s, size_t max_digits = 9);

/// What the marker records may hold, as the LibTorch releases write them:
/// 1.13 writes `version`; 2.x adds `byteorder` and `.data/serialization_id`,
/// 2.7 `.format_version` and `.storage_alignment`, and a file format of 6 or
/// more is named in `.data/version` instead of `version`. nullopt when
/// `name` is none of these; "" when `bytes` is allowed; else what is wrong.
std::optional<std::string> marker_problem(std::string_view name, const std::string& bytes);

/// "__torch__/___torch_mangle_3.py" -> "__torch__.___torch_mangle_3.Module";
/// "" if not a class file.
std::string class_of_code_record(std::string_view file);

}  // namespace gpt2::detail
