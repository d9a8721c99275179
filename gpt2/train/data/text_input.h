#pragma once
/// The text `gpt2 prepare` reads, in pieces of bounded size: files, the
/// regular files of a folder, or standard input, each one a document. A
/// piece ends where GPT-2's pre-tokenizer cannot join across (safe_cut), so
/// that tokenizing the pieces on several threads gives the ids of
/// tokenizing the whole document.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gpt2 {

/// A document to read: a regular file, or standard input ("-").
struct TextInput {
  std::string path;
  /// Bytes, for files; 0 for standard input (unknown).
  uint64_t size = 0;
  bool is_stdin() const { return path == "-"; }
};

/// The inputs named on a command line, each checked by read_file.h's rules
/// (a regular file, readable; FileError naming it otherwise): a folder
/// stands for its regular files in name order (hidden ones skipped); "-" for
/// standard input, at most once.
std::vector<TextInput> list_text_inputs(const std::vector<std::string>& paths);

/// A piece of a document, for the tokenizer.
struct TextPiece {
  std::string text;
  /// Which input it comes from.
  std::size_t document = 0;
  /// Whether it is the document's first piece.
  bool first = false;
  /// Offset of its first byte in the inputs, concatenated.
  uint64_t offset = 0;
};

/// Pieces a stretch without a safe cut may reach before it is cut at a
/// character boundary anyway, bounding memory (a file of NUL bytes has no
/// safe cut): GPT-2's pre-tokenizer may then split a word there that whole
/// text would keep, the one place prepare's tokens can differ from encoding
/// the text in one call.
inline constexpr std::size_t kMaxPieces = 16;

/// Reads `inputs` in order and calls `emit` with pieces of about
/// `piece_bytes` (longer only where no safe cut exists, up to kMaxPieces
/// times it), cut at safe_cut and at the offsets in `hard_cuts` (sorted;
/// bytes of the concatenation, e.g. where val begins). Throws FileError
/// naming an input that cannot be read.
void read_pieces(const std::vector<TextInput>& inputs, std::size_t piece_bytes,
                 const std::vector<uint64_t>& hard_cuts,
                 const std::function<void(TextPiece&&)>& emit);

}  // namespace gpt2
