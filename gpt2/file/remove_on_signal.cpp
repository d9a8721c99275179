#include "gpt2/file/remove_on_signal.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace gpt2 {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr size_t kPathMax = 4096;
constexpr int kSlotsPerBlock = 16;

// Read by the handler, so plain arrays and lock-free atomics only. The slots
// come in blocks of 16, each allocated (under the mutex, never in the
// handler) when the ones before are full and published whole through
// `next`; blocks are never freed, so the handler can always walk them. A
// writer that stages many files (a dataset's shards) has every one covered.
struct Block {
  char paths[kSlotsPerBlock][kPathMax];
  std::atomic<bool> used[kSlotsPerBlock];
  std::atomic<Block*> next{nullptr};
};
Block first_block;
struct sigaction previous[sizeof(kSignals) / sizeof(kSignals[0])];

std::mutex mutex;  // guards installing, restoring and claiming slots
int active = 0;

int index_of(int sig) {
  for (int i = 0; i < static_cast<int>(sizeof(kSignals) / sizeof(kSignals[0])); ++i) {
    if (kSignals[i] == sig) return i;
  }
  return -1;
}

void remove_all() {
  for (Block* b = &first_block; b != nullptr; b = b->next.load(std::memory_order_acquire)) {
    for (int s = 0; s < kSlotsPerBlock; ++s) {
      if (b->used[s].load()) ::unlink(b->paths[s]);
    }
  }
}

// Whether `sig` now has the default action: an application's handler that
// resets it and raises the signal again (a second Ctrl-C ends a run that
// the first asked to stop) ends the process once the handler returns.
bool ends_process(int sig) {
  struct sigaction now {};
  return ::sigaction(sig, nullptr, &now) == 0 && !(now.sa_flags & SA_SIGINFO) &&
         now.sa_handler == SIG_DFL;
}

void on_signal(int sig, siginfo_t* info, void* context) {
  const int i = index_of(sig);
  if (i < 0) return;
  const struct sigaction& prev = previous[i];
  if (prev.sa_flags & SA_SIGINFO) {
    prev.sa_sigaction(sig, info, context);
    if (ends_process(sig)) remove_all();
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler != SIG_DFL) {
    prev.sa_handler(sig);
    if (ends_process(sig)) remove_all();
    return;
  }
  remove_all();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

RemoveOnSignal::RemoveOnSignal(const std::string& tmp_path) {
  std::lock_guard<std::mutex> lock(mutex);
  if (tmp_path.size() >= kPathMax) return;
  for (Block* b = &first_block; slot_ < 0; b = b->next.load()) {
    for (int s = 0; s < kSlotsPerBlock; ++s) {
      if (!b->used[s].load()) {
        std::memcpy(b->paths[s], tmp_path.c_str(), tmp_path.size() + 1);
        b->used[s].store(true);
        block_ = b;
        slot_ = s;
        break;
      }
    }
    if (slot_ < 0 && b->next.load() == nullptr) b->next.store(new Block, std::memory_order_release);
  }
  if (active++ > 0) return;
  struct sigaction ours {};
  ours.sa_sigaction = on_signal;
  ours.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&ours.sa_mask);
  for (int i = 0; i < static_cast<int>(sizeof(kSignals) / sizeof(kSignals[0])); ++i) {
    ::sigaction(kSignals[i], &ours, &previous[i]);
  }
}

RemoveOnSignal::~RemoveOnSignal() {
  std::lock_guard<std::mutex> lock(mutex);
  if (slot_ < 0) return;
  static_cast<Block*>(block_)->used[slot_].store(false);
  if (--active > 0) return;
  for (int i = 0; i < static_cast<int>(sizeof(kSignals) / sizeof(kSignals[0])); ++i) {
    ::sigaction(kSignals[i], &previous[i], nullptr);
  }
}

}  // namespace gpt2
