#pragma once
// The module classes of a TorchScript archive's code/ records, parsed and
// printed exactly as LibTorch prints them (archive_class.cpp says how).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpt2::detail {

/// A module class from a code/ record.
struct ArchiveClass {
  /// Attribute names listed in __parameters__ and __buffers__.
  std::vector<std::string> parameters, buffers;
  /// Every attribute in order, with its TorchScript type ("Tensor", "int", ...).
  std::vector<std::pair<std::string, std::string>> attributes;
};

/// Parses a code/ record's text as one archive class; throws std::runtime_error
/// with the reason unless printing the result gives `text` back exactly.
ArchiveClass parse_archive_class(std::string_view text);

/// The code/ record text LibTorch writes for `c`.
std::string print_archive_class(const ArchiveClass& c);

}  // namespace gpt2::detail
