#pragma once
/// Files in and out: replacing a file so that readers see the old file or
/// the new one, never a mix (write a temporary file in the same folder,
/// fsync it, rename it over the target, fsync the folder). Reading is
/// read_file.h's.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include <string_view>

#include "gpt2/error.h"

namespace gpt2 {

class RemoveOnSignal;  // remove_on_signal.h

/// A file written in pieces beside `path` and made `path` by commit(), by
/// the rules of write_atomically: until then (and if the object is destroyed
/// uncommitted, or SIGINT / SIGTERM / SIGHUP ends the process) the temporary
/// is removed and an existing `path` untouched. For writers that produce a
/// file as a stream and patch a header at the end (token shards). Errors are
/// FileError `cannot write '<path>': <reason>`.
class StagedFile {
 public:
  explicit StagedFile(const std::string& path);
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  /// Writes `bytes` at the end of what was appended so far.
  void append(const void* data, std::size_t bytes);
  /// Writes `bytes` at `offset` (a header written before its counts were known).
  void write_at(uint64_t offset, const void* data, std::size_t bytes);
  /// Bytes appended.
  uint64_t size() const { return size_; }
  /// Closes and fsyncs the temporary, which stays staged (and removed if
  /// never committed): for writers that stage many files, one open at a
  /// time, and rename them together at the end (a dataset's shards).
  void close();
  /// Closes, fsyncs and renames the temporary over `path`.
  void commit();

  /// The temporary file, for writers that open it themselves.
  const std::string& tmp_path() const { return tmp_; }
  /// The FileError for `reason`, naming `path`.
  FileError error(const std::string& reason) const;

 private:
  void open_fd();
  std::string path_, target_, folder_, tmp_;
  std::unique_ptr<RemoveOnSignal> remove_on_signal_;
  int fd_ = -1;
  uint64_t size_ = 0;
  bool synced_ = false;
  bool committed_ = false;
};

/// Fills a fresh temporary file beside `path` through the stream given to
/// `write`, then makes it `path`. The stream never fails midway: a write
/// error (a full disk: ENOSPC) is recorded, and reported once `write`
/// returns, so writers that cannot unwind from a short write (LibTorch's
/// zip writer) end cleanly. If anything fails, or SIGINT / SIGTERM / SIGHUP
/// ends the process meanwhile, the temporary file is removed and an
/// existing `path` is untouched; FileError names `path` and the reason.
///
/// `path` must be a regular file or not exist: a device, FIFO, socket or
/// folder there is refused. A symbolic link is followed: the file it points
/// to is replaced and the link stays. Temporary files left by a killed
/// process (SIGKILL) for the same target are removed.
void write_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

/// As above for writers that open the file themselves: `write(tmp_path)`
/// fills the temporary file. Write errors surface as that writer reports them.
void write_atomically(const std::string& path,
                      const std::function<void(const std::string& tmp_path)>& write);

/// Removes from `folder` every temporary (`.<name>.tmp-<pid>-<n>`) that a
/// process no longer alive left there (killed by SIGKILL mid-write), for
/// every target, not only those the caller writes again: a writer that
/// fills a folder calls it before it starts.
void remove_stale_temporaries(const std::string& folder);

/// Whether `a` and `b` both exist and are the same file (device and inode),
/// links and other spellings of a path included.
bool same_file(const std::string& a, const std::string& b);

/// The output rule of every command that reads files and writes one:
/// throws FileError `cannot write 'OUT': it is the same file as the input
/// 'IN' (WHAT), which writing would replace` when `out` is the same file
/// (same_file) as one of `inputs` (path, what it is: "the model read",
/// "the log plotted"). Called before anything is read, so nothing is lost.
void refuse_writing_over_inputs(const std::string& out,
                                const std::vector<std::pair<std::string, std::string>>& inputs);

/// Writes `bytes` as the whole of `path`, atomically as write_atomically.
void write_file_atomically(const std::string& path, std::string_view bytes);

/// Files that are one unit (a model's weights and its config.json), the
/// last of them the unit's marker, which its reader requires: every file is
/// written to its temporary first, so a failure there leaves the old unit
/// whole; then the old marker is removed (remove_marker), the others are
/// renamed into place, and the marker last. A process killed between the
/// renames leaves a unit without its marker, which its reader refuses by
/// name, never new files beside old ones read as one.
void write_files_atomically(const std::vector<std::pair<std::string, std::string_view>>& files);

/// Removes `marker` (and syncs its folder) if it exists: the first step of
/// replacing a unit whose files are committed one by one (a dataset's
/// train.bin and val.bin before its meta.json). FileError if it cannot.
void remove_marker(const std::string& marker);

}  // namespace gpt2
