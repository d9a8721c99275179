#pragma once
/// A long-lived generation service: one thread owns the model and decodes
/// every running request together (BatchDecoder), admitting new requests
/// and dropping finished ones between steps (continuous batching). Any
/// thread may submit or cancel; each request hears its tokens as they are
/// chosen. `gpt2 serve` runs its HTTP requests through one.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpt2/fields/fields.h"
#include "gpt2/generate/generate.h"
#include "gpt2/model/gpt.h"

namespace gpt2 {

/// Why a request ended.
enum class FinishReason {
  kStop,       ///< its stop token, or its on_token asked to stop
  kLength,     ///< max_new_tokens reached
  kCancelled,  ///< Scheduler::cancel, or the scheduler shut down first
  kTimeLimit,  ///< its deadline passed, queued or running
  kError,      ///< its step threw: non-finite logits, its on_token, the model's forward
};

/// The spellings (names<Enum>() in gpt2/fields/fields.h): "stop",
/// "length", "cancelled", "time_limit", "error" (the first two are
/// OpenAI's finish_reason words).
template <>
const std::vector<std::pair<FinishReason, std::string>>& names<FinishReason>();
std::string to_string(FinishReason reason);

/// One sequence to generate.
struct GenerationRequest {
  /// The prompt's token ids: non-empty, inside the model's vocabulary.
  std::vector<int64_t> prompt;
  /// Sampling: temperature, top_k, top_p, its own seed, max_new_tokens,
  /// stop_token (use_cache is the scheduler's).
  SamplingOptions options;
  /// Called on the scheduler's thread with each new token, as soon as it
  /// is chosen; returning false ends the request (kStop), as a stop string
  /// does. The stop token itself is reported before the request ends.
  std::function<bool(int64_t token)> on_token;
  /// Called once on the scheduler's thread when the request ends. What it
  /// throws is dropped: the request has ended.
  std::function<void(FinishReason reason)> on_finish;
  /// Called on the scheduler's thread, just before on_finish(kError), with
  /// the message of what the request's step threw. The other requests go on.
  std::function<void(const std::string& message)> on_error;
  /// When set, the request ends (kTimeLimit) at the first step after it,
  /// whether it is decoding or still waiting for a place.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

/// The thread that runs requests.
class Scheduler {
 public:
  /// Starts the thread; at most `max_batch` requests decode at once (the
  /// others wait in arrival order), each in a slot of a KV cache. On a
  /// CUDA device, with `cuda_graphs`, the cache is made for max_batch
  /// sequences and each step replays a CUDA graph of the fewest of 1, 2, 4,
  /// ... slots that hold the running requests (DecodeSteps::kGraphed);
  /// elsewhere the cache grows with the requests. Newcomers are prefilled
  /// together before the step that first decodes them. The model is put in
  /// eval mode and used by this scheduler's thread only from here on.
  /// Throws ConfigError for max_batch below 1, and InputError naming the
  /// slots and gigabytes where the cache made at the start cannot be
  /// allocated (so a server fails as it starts, not at each request).
  explicit Scheduler(GPT model, int64_t max_batch = 8, bool cuda_graphs = true);
  /// Cancels what is queued or running (on_finish(kCancelled)) and joins.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// Queues a request and returns its id. Throws InputError for an empty
  /// prompt, an id outside the vocabulary or bad sampling options, before
  /// queuing anything.
  int64_t submit(GenerationRequest request);
  /// Ends request `id` before its next token (on_finish(kCancelled)); a
  /// request that already ended is left alone.
  void cancel(int64_t id);
  /// cancel() of every request queued or running.
  void cancel_all();

  /// Requests decoding now, and waiting for a place.
  int64_t running() const;
  int64_t waiting() const;
  /// The model's config.
  const GPTConfig& config() const { return model_->config; }

 private:
  struct Job;
  void loop(std::promise<void>& started);  // set once the decoder is made

  GPT model_;
  int64_t max_batch_;
  bool cuda_graphs_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<int64_t> queue_;
  std::map<int64_t, std::shared_ptr<Job>> jobs_;  // queued and running
  int64_t next_id_ = 0, running_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpt2
