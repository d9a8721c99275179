#include "apps/gpt2/common/stop_signal.h"

namespace gpt2::app {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int sig) {
  if (g_stop.exchange(true)) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

SignalScope::SignalScope(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  // The handler only sets a flag: a read, write or wait that the signal
  // lands in (Gloo's, LibTorch's, ours) goes on as if none had come.
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

SignalScope::~SignalScope() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

// The flag is cleared before the handler goes in.
StopOnSignal::StopOnSignal() : scope_((g_stop = false, on_stop_signal)) {}

const std::atomic<bool>* StopOnSignal::stop() const { return &g_stop; }

}  // namespace gpt2::app
