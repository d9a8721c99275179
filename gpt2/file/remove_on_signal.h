#pragma once
/// Removing a half-written temporary file when the process is interrupted.
/// Internal to gpt2/file (AtomicFile holds one).

#include <string>

namespace gpt2 {

/// While alive, a SIGINT, SIGTERM or SIGHUP whose action is the default
/// (ending the process) first removes `tmp_path`, then ends the process as
/// the default would. A handler the application installed runs instead and
/// nothing is removed, since it may let the save finish (a training loop
/// that stops after the step), unless it leaves the default action in place
/// (it resets the signal and raises it again to end the process: a second
/// Ctrl-C during the save), when `tmp_path` is removed before that ends it. SIGKILL cannot be caught: write_atomically removes
/// such leftovers at the next save of the same file. Any number at once
/// (a dataset's staged shards).
class RemoveOnSignal {
 public:
  explicit RemoveOnSignal(const std::string& tmp_path);
  ~RemoveOnSignal();
  RemoveOnSignal(const RemoveOnSignal&) = delete;
  RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;

 private:
  void* block_ = nullptr;  // the slot's block (remove_on_signal.cpp)
  int slot_ = -1;
};

}  // namespace gpt2
