#pragma once
// Whether the program at a rendezvous address speaks before it is asked.

#include <chrono>
#include <cstdint>
#include <string>

namespace gpt2::detail {

/// Connects to host:port and waits up to `wait` for bytes the peer sends
/// unasked. A rendezvous store never speaks first; a banner protocol (SSH,
/// SMTP, FTP) does, and LibTorch 1.13's store client has a thread that
/// reads such bytes as a length and ends the process when it cannot
/// allocate it. Returns the first bytes received, at most 64, or "" when
/// the peer stayed silent, closed, or could not be reached (the store's own
/// connect reports that, with its retries and timeout).
std::string unasked_bytes(const std::string& host, uint16_t port, std::chrono::milliseconds wait);

}  // namespace gpt2::detail
