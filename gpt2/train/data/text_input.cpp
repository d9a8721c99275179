#include "gpt2/train/data/text_input.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>

#include "gpt2/error.h"
#include "gpt2/file/read_file.h"
#include "gpt2/text/tokenizer.h"

namespace gpt2 {
namespace {

// A safe cut at or after `from` (>= 4), or 0: safe_cut over windows that
// start 4 bytes early, as far back as it looks.
std::size_t safe_cut_after(std::string_view text, std::size_t from) {
  constexpr std::size_t kWindow = 1 << 16;
  for (std::size_t start = from; start + 1 < text.size(); start += kWindow) {
    const std::string_view window = text.substr(start - 4, kWindow + 5);
    const std::size_t cut = safe_cut(window, window.size() - 1);
    if (cut >= 4) return start - 4 + cut;
  }
  return 0;
}

}  // namespace

std::vector<TextInput> list_text_inputs(const std::vector<std::string>& paths) {
  std::vector<TextInput> out;
  const auto add = [&](const std::string& path) {
    const InputFile file(path, "input");  // regular, readable: refused here, before any output
    out.push_back({path, file.size()});
  };
  bool seen_stdin = false;
  for (const auto& path : paths) {
    if (path == "-") {
      if (seen_stdin) throw InputError("standard input ('-') is given twice as an input");
      seen_stdin = true;
      out.push_back({path, 0});
      continue;
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) {
      add(path);
      continue;
    }
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      if (entry.path().filename().string()[0] != '.' && entry.is_regular_file(ec)) {
        files.push_back(entry.path().string());
      }
    }
    if (ec) throw FileError(fmt::format("cannot list input folder '{}': {}", path, ec.message()));
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError(fmt::format("input folder '{}' holds no regular files", path));
    for (const auto& file : files) add(file);
  }
  return out;
}

void read_pieces(const std::vector<TextInput>& inputs, std::size_t piece_bytes,
                 const std::vector<uint64_t>& hard_cuts,
                 const std::function<void(TextPiece&&)>& emit) {
  uint64_t next_byte = 0;  // offset of the next byte to read, in the concatenation
  std::size_t next_cut = 0;
  std::string pending;
  std::vector<char> block(piece_bytes);
  for (std::size_t d = 0; d < inputs.size(); ++d) {
    std::optional<InputFile> file;
    if (!inputs[d].is_stdin()) file.emplace(inputs[d].path, "input");
    const int fd = file ? file->fd() : STDIN_FILENO;
    uint64_t pending_offset = next_byte;
    bool first = true;
    const auto flush = [&](std::size_t n) {
      emit(TextPiece{pending.substr(0, n), d, first, pending_offset});
      first = false;
      pending.erase(0, n);
      pending_offset += n;
    };
    for (bool end = false; !end;) {
      while (next_cut < hard_cuts.size() && hard_cuts[next_cut] < next_byte) ++next_cut;
      std::size_t want = block.size();
      if (next_cut < hard_cuts.size()) want = std::min<uint64_t>(want, hard_cuts[next_cut] - next_byte);
      if (want > 0) {
        const ssize_t n = ::read(fd, block.data(), want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          const std::string reason = "read: " + errno_text(errno);
          throw file ? file->error(reason) : FileError("cannot read standard input: " + reason);
        }
        pending.append(block.data(), static_cast<std::size_t>(n));
        next_byte += static_cast<uint64_t>(n);
        end = n == 0;
      }
      if (next_cut < hard_cuts.size() && next_byte == hard_cuts[next_cut]) {
        if (!pending.empty()) flush(pending.size());
        ++next_cut;
        continue;
      }
      while (pending.size() > piece_bytes) {
        std::size_t cut = safe_cut(pending, piece_bytes);
        if (cut == 0) cut = safe_cut_after(pending, piece_bytes);
        if (cut == 0 && pending.size() >= kMaxPieces * piece_bytes) {
          // Bounded memory over a stretch without a safe cut (/dev/zero): a
          // cut at a character boundary.
          cut = piece_bytes;
          while (cut > 0 && (static_cast<unsigned char>(pending[cut]) & 0xC0) == 0x80) --cut;
          if (cut == 0) cut = piece_bytes;
        }
        if (cut == 0) break;  // no cut yet: read on
        flush(cut);
      }
    }
    if (!pending.empty()) flush(pending.size());
  }
}

}  // namespace gpt2
