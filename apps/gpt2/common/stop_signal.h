#pragma once
// SIGINT/SIGTERM handling for the commands that run for long: a scope that
// installs a handler and restores the previous ones, and the training's
// "finish the step, checkpoint, exit" flag.

#include <atomic>
#include <csignal>

namespace gpt2::app {

/// Installs `handler` for SIGINT and SIGTERM for its lifetime, then puts
/// back the handlers it replaced.
class SignalScope {
 public:
  explicit SignalScope(void (*handler)(int));
  ~SignalScope();
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

/// While it lives, the first SIGINT/SIGTERM sets stop() (finish the step,
/// checkpoint, exit 0); a second ends the process at once, as the default
/// action does.
class StopOnSignal {
 public:
  StopOnSignal();
  /// The flag the first signal sets.
  const std::atomic<bool>* stop() const;

 private:
  SignalScope scope_;
};

}  // namespace gpt2::app
