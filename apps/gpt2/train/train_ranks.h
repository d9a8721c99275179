#pragma once
// The data-parallel side of `gpt2 train`: joining the process group that
// torchrun's variables describe, with C/N threads per process, and the
// start and end lines that every rank prints.

#include <chrono>
#include <cstdio>
#include <memory>

#include "gpt2/model/gpt.h"
#include "gpt2/train/distributed.h"

namespace gpt2::app {

/// For WORLD_SIZE > 1: sets the compute threads (default_threads: torchrun's
/// OMP_NUM_THREADS, else the cores shared out) and
/// joins the Gloo group, waiting at most `timeout` for the others; nullptr
/// for a single process. Prints the start line on every rank:
/// `dist      world size 2, rank 0 (local 0 of 2) ...`. Throws
/// DistributedError before any training when the group cannot form.
std::shared_ptr<DataParallel> join_run(const DistEnv& env, std::chrono::milliseconds timeout);

/// CRC-32 of the CRC-32s of the model's unique parameters, in order: equal
/// on every rank when the ranks hold the same weights.
uint32_t weights_crc32(const GPTImpl& model);

/// In a data-parallel run, every rank's last line: its weights' CRC-32 and
/// the gradient averaging's share of the training time (`train_seconds`).
/// Prints nothing for a single process (`dp` null).
void print_rank_end(const GPTImpl& model, const DataParallel* dp, double train_seconds);

/// Where rank > 0 prints what only rank 0 should show: /dev/null, opened once.
std::FILE* null_sink();

}  // namespace gpt2::app
