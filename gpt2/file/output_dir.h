#pragma once
/// The output rule for folders, shared by every writer that fills one (a
/// run's --out, a prepared dataset, a Hugging Face folder, a study): the
/// folder is made, with its parents, or refused with a FileError that names
/// it and says why (a file in the way, no permission, a read-only file
/// system, no space, an empty path) before anything is written; and a run
/// folder can be locked so that two processes never write into one.

#include <string>

namespace gpt2 {

/// Makes `dir` (and missing parents) unless it is a folder already, and
/// checks that files can be created in it. Returns whether it was made.
/// Throws FileError `cannot use 'DIR' as the WHAT: REASON`, e.g. `'run' is
/// a regular file, not a folder`, `read-only file system (EROFS)`.
bool make_output_dir(const std::string& dir, const std::string& what = "output folder");

/// The rule for a writer that fills folder `dir` from files: throws
/// FileError `'IN' is inside the WHAT 'DIR', which this writes: it would be
/// overwritten; write the WHAT elsewhere` when `input` is `dir` or lies in
/// it, by their paths with links resolved (`dir` need not exist yet).
/// Called before anything is written, so no input is lost.
void refuse_input_inside(const std::string& input, const std::string& dir, const std::string& what);

/// An exclusive lock on a folder (flock on the folder itself, so no file is
/// left behind), held until destroyed; the kernel drops it when the process
/// ends, however it ends. For a run's --out: a second trainer on the
/// same folder is refused instead of interleaving its files with the first's.
class FolderLock {
 public:
  /// Locks `dir` (which must exist). Throws FileError `'DIR' is in use by
  /// another process ...` when another holds it, or naming the reason it
  /// cannot be opened.
  explicit FolderLock(const std::string& dir);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace gpt2
