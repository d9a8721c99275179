#include "gpt2/model/defer_init.h"

namespace gpt2 {
namespace {
thread_local bool defer_init = false;
}  // namespace

DeferInit::DeferInit() : previous_(defer_init) { defer_init = true; }
DeferInit::~DeferInit() { defer_init = previous_; }
bool DeferInit::active() { return defer_init; }

}  // namespace gpt2
