#pragma once
// The rendezvous of a data-parallel run: the TCPStore every rank meets at,
// and the words for what goes wrong there. The c10d headers stay in the
// .cpp but for Store.hpp, which the store's type needs.

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <exception>
#include <string>

#include "gpt2/train/distributed.h"

namespace gpt2::detail {

/// How an error names the rank: `rank 1 of 2 (MASTER_ADDR A, MASTER_PORT P)`.
std::string where(const DistEnv& env);

/// An exception's message without c10's backtrace (its lines after the first).
std::string first_line(const std::exception& e);

/// Whether this rank serves the store: rank 0, unless the launcher does.
bool serves_store(const DistEnv& env);

/// For a rank that is the store's client: when `e` says the program at
/// MASTER_ADDR:MASTER_PORT answered as no rendezvous store does (a length
/// beyond memory, a reply of the wrong kind, a wrong answer to a ping), the
/// message saying so and pointing at the port; else "".
std::string stranger_message(const DistEnv& env, const std::exception& e);

/// The run's store under env.store_prefix: served by rank 0 (unless the
/// launcher serves it), reached by the others, each waiting at most
/// `timeout`. A client first refuses a program at the address that speaks
/// before it is asked. Throws DistributedError naming the rank and why:
/// the port is taken, the peers did not join, the store cannot be reached,
/// or a stranger answered.
c10::intrusive_ptr<c10d::Store> open_store(const DistEnv& env, std::chrono::milliseconds timeout);

}  // namespace gpt2::detail
