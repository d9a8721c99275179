#pragma once
/// Replacing a file so that readers see the old file or the new one, never
/// a mix: write a temporary file in the same folder, fsync it, rename it
/// over the target, fsync the folder.

#include <functional>
#include <string>
#include <string_view>

namespace gpt2 {

/// Calls `write(tmp_path)` to fill a fresh temporary file beside `path`, then
/// makes it `path`. If `write` or any step throws, the temporary file is
/// removed, an existing `path` is untouched, and FileError names `path`.
void write_atomically(const std::string& path,
                      const std::function<void(const std::string& tmp_path)>& write);

/// Writes `bytes` as the whole of `path`, atomically as write_atomically.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace gpt2
