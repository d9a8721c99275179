// The TCPStore of a data-parallel run, and its error wording.
#include "gpt2/train/detail/rendezvous.h"

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <new>

#include "gpt2/ops/torch_compat.h"
#include "gpt2/train/detail/store_greeting.h"

namespace gpt2::detail {
namespace {

// What `e` says a peer sent that no rendezvous store sends, or "" when it
// is no such reply: a length beyond memory (the store client allocates what
// the peer announced, so a stranger's bytes become bad_alloc), a reply of
// the wrong kind (1.13) or a wrong answer to the ping 2.x's client opens
// with (each release words it otherwise). The message built on it points
// at the port, the likely cause.
std::string stranger_reply(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return "a length larger than memory";
  const std::string what = first_line(e);
  if (what.find("response is expected") != std::string::npos) return what;
  if (what.find("invalid nonce returned") != std::string::npos ||  // 2.6
      what.find("Ping failed") != std::string::npos) {              // 2.11
    return "a wrong answer to a ping";
  }
  return "";
}

std::string stranger(const DistEnv& env, const std::string& reply) {
  return fmt::format("the program at {}:{} answered as no rendezvous store does ({}): is another "
                     "program listening on MASTER_PORT {}? choose a free port for rank 0",
                     env.master_addr, env.master_port, reply, env.master_port);
}

// A peer that speaks before it is asked is no rendezvous store, and 1.13's
// store client would read its bytes on a thread of its own, where a failed
// allocation ends the process: refused before the client connects.
void refuse_a_speaking_peer(const DistEnv& env) {
  const std::string bytes = unasked_bytes(env.master_addr, static_cast<uint16_t>(env.master_port),
                                          std::chrono::milliseconds(200));
  if (bytes.empty()) return;
  std::string shown;
  for (const char c : bytes.substr(0, bytes.find_first_of("\r\n"))) {
    shown += (c >= 0x20 && c < 0x7f) ? std::string(1, c) : fmt::format("\\x{:02x}", static_cast<uint8_t>(c));
  }
  throw DistributedError(fmt::format(
      "{}: {}", where(env), stranger(env, fmt::format("a greeting before any question: '{}'", shown))));
}

}  // namespace

std::string where(const DistEnv& env) {
  return fmt::format("rank {} of {} (MASTER_ADDR {}, MASTER_PORT {})", env.rank, env.world_size,
                     env.master_addr, env.master_port);
}

std::string first_line(const std::exception& e) {
  const std::string what = e.what();
  return what.substr(0, what.find('\n'));
}

bool serves_store(const DistEnv& env) { return env.rank == 0 && !env.agent_store; }

std::string stranger_message(const DistEnv& env, const std::exception& e) {
  const std::string reply = stranger_reply(e);
  return reply.empty() ? "" : stranger(env, reply);
}

c10::intrusive_ptr<c10d::Store> open_store(const DistEnv& env, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(env.master_port);
  o.isServer = serves_store(env);
  o.numWorkers = env.agent_store ? c10::nullopt : c10::optional<size_t>(env.world_size);
  o.waitWorkers = !env.agent_store;
  o.timeout = timeout;
  compat::use_classic_store_server(o);
  if (!o.isServer) refuse_a_speaking_peer(env);
  const auto start = std::chrono::steady_clock::now();
  try {
    return c10::make_intrusive<c10d::PrefixStore>(
        env.store_prefix, c10::make_intrusive<c10d::TCPStore>(env.master_addr, o));
  } catch (const std::exception& e) {
    // A server that fails before the timeout could not listen; one that
    // fails at it waited for peers in vain.
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const bool timed_out = waited >= 0.9 * static_cast<double>(timeout.count()) / 1e3;
    const std::string strange = o.isServer ? "" : stranger_message(env, e);
    if (!strange.empty()) throw DistributedError(fmt::format("{}: {}", where(env), strange));
    std::string why;
    if (o.isServer && !timed_out) {
      why = fmt::format("cannot serve the rendezvous store on port {} (is another program on it? "
                        "choose another MASTER_PORT)", env.master_port);
    } else if (o.isServer) {
      why = fmt::format("not all {} ranks joined within {:.0f} s", env.world_size, waited);
    } else {
      why = fmt::format("cannot reach the rendezvous store at {}:{} within {:.0f} s (is rank 0 "
                        "running, and MASTER_ADDR its address?)", env.master_addr,
                        env.master_port, waited);
    }
    throw DistributedError(fmt::format("{}: {}: {}", where(env), why, first_line(e)));
  }
}

}  // namespace gpt2::detail
