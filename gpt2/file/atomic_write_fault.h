#pragma once
/// Test seam of write_atomically; not installed, not part of the API.

#include <functional>
#include <string_view>

namespace gpt2::detail {

/// When set, called at each step of write_atomically ("written", "synced")
/// so tests can fail a save midway. Not thread-safe.
extern std::function<void(std::string_view step)> atomic_write_fault;

}  // namespace gpt2::detail
