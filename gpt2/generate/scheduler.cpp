#include "gpt2/generate/scheduler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/DeviceGuard.h>
#include <fmt/format.h>

#include "gpt2/error.h"
#include "gpt2/generate/batch_decoder.h"

namespace gpt2 {

template <>
const std::vector<std::pair<FinishReason, std::string>>& names<FinishReason>() {
  static const std::vector<std::pair<FinishReason, std::string>> kNames = {
      {FinishReason::kStop, "stop"},
      {FinishReason::kLength, "length"},
      {FinishReason::kCancelled, "cancelled"},
      {FinishReason::kTimeLimit, "time_limit"},
      {FinishReason::kError, "error"}};
  return kNames;
}

std::string to_string(FinishReason reason) { return enum_name(reason); }

struct Scheduler::Job {
  explicit Job(GenerationRequest r)
      : request(std::move(r)),
        generator(at::make_generator<at::CPUGeneratorImpl>(request.options.seed())) {}
  GenerationRequest request;
  at::Generator generator;  // this request's own draws: a seed repeats its text
  int64_t produced = 0;     // the scheduler's thread only
  int64_t row = -1;         // its BatchDecoder id once admitted
  bool cancelled = false;   // under mutex_
};

Scheduler::Scheduler(GPT model, int64_t max_batch, bool cuda_graphs)
    : model_(std::move(model)), max_batch_(max_batch), cuda_graphs_(cuda_graphs) {
  if (max_batch < 1) throw ConfigError(fmt::format("max_batch must be at least 1, got {}", max_batch));
  model_->eval();
  std::promise<void> started;
  std::future<void> ready = started.get_future();
  thread_ = std::thread([this, started = std::move(started)]() mutable { loop(started); });
  try {
    ready.get();  // the decoder and its cache made on the thread, or why not
  } catch (...) {
    thread_.join();
    throw;
  }
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

int64_t Scheduler::submit(GenerationRequest request) {
  validate(request.options);
  const auto& p = request.prompt;
  if (p.empty()) throw InputError("a prompt of 0 tokens: there is nothing to continue");
  const int64_t vocab = model_->config.vocab_size();
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] < 0 || p[i] >= vocab) {
      throw InputError(fmt::format("token id {} at position {} of the prompt is outside the "
                                   "vocabulary [0, {})", p[i], i, vocab));
    }
  }
  auto job = std::make_shared<Job>(std::move(request));
  int64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    id = next_id_++;
    jobs_[id] = job;
    queue_.push_back(id);
  }
  wake_.notify_all();
  return id;
}

void Scheduler::cancel(int64_t id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = jobs_.find(id);
    if (it == jobs_.end()) return;
    it->second->cancelled = true;
  }
  wake_.notify_all();
}

void Scheduler::cancel_all() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [id, job] : jobs_) job->cancelled = true;
  }
  wake_.notify_all();
}

int64_t Scheduler::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

int64_t Scheduler::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(queue_.size());
}

void Scheduler::loop(std::promise<void>& started) {
  torch::NoGradGuard no_grad;
  const c10::OptionalDeviceGuard on_device(model_->lm_head->weight.device());  // not GPU 0's
  const bool graphs = cuda_graphs_ && model_->lm_head->weight.device().is_cuda();
  // Graphed steps need their cache's tensors fixed: made here, once, for
  // max_batch. Elsewhere the cache grows with the running requests.
  std::optional<BatchDecoder> made;
  try {
    made.emplace(*model_, /*use_cache=*/true,
                 graphs ? DecodeSteps::kGraphed : DecodeSteps::kDynamic, graphs ? max_batch_ : 0);
  } catch (...) {
    started.set_exception(std::current_exception());
    return;
  }
  started.set_value();
  BatchDecoder& decoder = *made;
  std::map<int64_t, std::shared_ptr<Job>> active;  // job id -> job, decoding
  std::map<int64_t, int64_t> job_of_row;           // decoder id -> job id
  // Ends job `id` (the scheduler's thread; the lock not held).
  auto finish = [&](int64_t id, const std::shared_ptr<Job>& job, FinishReason reason) {
    if (job->row >= 0) {
      decoder.remove(job->row);
      job_of_row.erase(job->row);
    }
    active.erase(id);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.erase(id);
      running_ = static_cast<int64_t>(active.size());
    }
    if (!job->request.on_finish) return;
    try {
      job->request.on_finish(reason);
    } catch (...) {  // the request has ended; nothing is left to tell
    }
  };
  // Ends job `id` with kError, its on_error told `message` first.
  auto fail = [&](int64_t id, const std::shared_ptr<Job>& job, const std::string& message) {
    if (job->request.on_error) {
      try {
        job->request.on_error(message);
      } catch (...) {  // on_finish still follows
      }
    }
    finish(id, job, FinishReason::kError);
  };
  // The message of the exception being handled.
  const auto what = [](std::exception_ptr e) -> std::string {
    try {
      std::rethrow_exception(std::move(e));
    } catch (const std::exception& x) {
      return x.what();
    } catch (...) {
      return "an exception that is not a std::exception";
    }
  };
  const auto expired = [](const Job& job, std::chrono::steady_clock::time_point now) {
    return job.request.deadline && now >= *job.request.deadline;
  };
  for (;;) {
    std::vector<std::pair<int64_t, std::shared_ptr<Job>>> admitted, cancelled, late;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !active.empty(); });
      if (stopping_) break;
      const auto now = std::chrono::steady_clock::now();
      for (auto it = queue_.begin(); it != queue_.end();) {  // waited past its deadline
        const auto& job = jobs_.at(*it);
        if (!job->cancelled && expired(*job, now)) {
          late.emplace_back(*it, job);
          it = queue_.erase(it);
        } else {
          ++it;
        }
      }
      while (!queue_.empty() &&
             static_cast<int64_t>(active.size() + admitted.size()) < max_batch_) {
        const int64_t id = queue_.front();
        queue_.pop_front();
        admitted.emplace_back(id, jobs_.at(id));
      }
      for (const auto& [id, job] : active) {
        if (job->cancelled) cancelled.emplace_back(id, job);
      }
      for (const auto& [id, job] : admitted) {
        if (job->cancelled) cancelled.emplace_back(id, job);
      }
    }
    for (const auto& [id, job] : admitted) {
      active[id] = job;
      if (job->cancelled) continue;
      if (job->request.options.max_new_tokens() == 0) {
        finish(id, job, FinishReason::kLength);
        continue;
      }
      try {
        job->row = decoder.add(job->request.prompt);
      } catch (...) {
        fail(id, job, what(std::current_exception()));
        continue;
      }
      job_of_row[job->row] = id;
    }
    for (const auto& [id, job] : cancelled) finish(id, job, FinishReason::kCancelled);
    for (const auto& [id, job] : late) {
      active[id] = job;
      finish(id, job, FinishReason::kTimeLimit);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      running_ = static_cast<int64_t>(active.size());
    }
    if (decoder.empty()) continue;

    torch::Tensor logits;  // (rows, V)
    try {
      logits = decoder.next_logits();
    } catch (...) {  // the batch's forward: every request in it ends
      const std::string message = what(std::current_exception());
      for (const int64_t row : std::vector<int64_t>(decoder.ids())) {
        const int64_t id = job_of_row.at(row);
        fail(id, active.at(id), message);
      }
      continue;
    }
    // One token per row, the rows that draw on the device in one batch
    // there; a row whose logits are not finite ends alone, before the
    // others' tokens are appended.
    std::map<int64_t, int64_t> token_of_row;
    const std::vector<int64_t> rows = decoder.ids();
    std::vector<RowSampler> samplers;
    for (const int64_t row : rows) {
      const std::shared_ptr<Job>& job = active.at(job_of_row.at(row));
      samplers.push_back({&job->request.options, &job->generator});
    }
    std::vector<RowDraw> drawn;
    try {
      drawn = sample_rows(logits, samplers);
    } catch (...) {  // not a row's logits (each row gets its own error): every row ends
      const std::string message = what(std::current_exception());
      for (const int64_t row : rows) fail(job_of_row.at(row), active.at(job_of_row.at(row)), message);
      continue;
    }
    for (size_t r = 0; r < rows.size(); ++r) {
      const int64_t id = job_of_row.at(rows[r]);
      if (drawn[r].error.empty()) {
        token_of_row[rows[r]] = drawn[r].token;
      } else {
        fail(id, active.at(id), drawn[r].error);
      }
    }
    std::vector<int64_t> tokens;
    for (const int64_t row : decoder.ids()) tokens.push_back(token_of_row.at(row));
    decoder.append(tokens);
    for (const auto& [row, token] : token_of_row) {
      const int64_t id = job_of_row.at(row);
      const std::shared_ptr<Job> job = active.at(id);
      const SamplingOptions& o = job->request.options;
      ++job->produced;
      bool more = true;
      try {
        more = !job->request.on_token || job->request.on_token(token);
      } catch (...) {
        fail(id, job, what(std::current_exception()));
        continue;
      }
      if (!more || (o.stop_token() && token == *o.stop_token())) {
        finish(id, job, FinishReason::kStop);
      } else if (job->produced >= o.max_new_tokens()) {
        finish(id, job, FinishReason::kLength);
      } else if (expired(*job, std::chrono::steady_clock::now())) {
        finish(id, job, FinishReason::kTimeLimit);
      }
    }
  }
  // Shutting down: every request still here ends as cancelled.
  std::map<int64_t, std::shared_ptr<Job>> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    left = jobs_;
  }
  for (const auto& [id, job] : left) {
    if (!active.count(id)) job->row = -1;
    active[id] = job;
    finish(id, job, FinishReason::kCancelled);
  }
}

}  // namespace gpt2
