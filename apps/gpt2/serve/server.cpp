#include "apps/gpt2/serve/server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "apps/gpt2/serve/completion_state.h"
#include "apps/gpt2/serve/completions.h"
#include "apps/gpt2/serve/http_replies.h"
#include "gpt2/error.h"
#include "gpt2/generate/scheduler.h"

namespace gpt2::app {
// Named, not anonymous: HttpServer::Impl derives from Routes, and a class
// of external linkage may not have a base of internal linkage.
namespace serve_routes {

using nlohmann::json;

class Routes {
 public:
  Routes(const ServeFlags& flags, GPT model, Tokenizer tokenizer)
      : name_(flags.model),
        max_batch_(flags.max_batch),
        max_queue_(flags.max_queue),
        request_timeout_(flags.request_timeout),
        draw_(enum_from_name<Draw>(flags.draw, "--draw")),
        api_key_(flags.api_key),
        vocab_size_(model->config.vocab_size()),
        tokenizer_(std::move(tokenizer)),
        scheduler_(std::move(model), flags.max_batch, !flags.no_cuda_graphs) {
    // Bounds a client cannot pass: a body of kMaxBody bytes, counted as it
    // arrives, chunked or not (413 beyond); 10 s for each read or write of
    // a request or response; 5 s for a connection to send its request
    // line, idle or kept alive. kWorkers threads answer connections, so that
    // slow or idle clients up to that many leave /health answering.
    // httplib's own bound sits above ours (cpp-httplib 0.18 bounds chunked
    // bodies too, 0.11 does not), so that the count below decides the 413.
    http_.set_payload_max_length(2 * kMaxBody);
    http_.set_read_timeout(10, 0);
    http_.set_write_timeout(10, 0);
    http_.set_keep_alive_timeout(5);
    http_.new_task_queue = [] { return new httplib::ThreadPool(kWorkers); };
    http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (api_key_.empty() || req.get_header_value("Authorization") == "Bearer " + api_key_) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      reply_error(res, 401, "a valid API key is needed: send 'Authorization: Bearer <key>'",
                  "invalid_api_key");
      return httplib::Server::HandlerResponse::Handled;
    });
    http_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(dump({{"status", "ok"},
                            {"running", scheduler_.running()},
                            {"waiting", scheduler_.waiting()}}),
                      "application/json");
    });
    http_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(dump({{"object", "list"},
                            {"data", json::array({{{"id", name_},
                                                   {"object", "model"},
                                                   {"created", 0},
                                                   {"owned_by", "gpt2"}}})}}),
                      "application/json");
    });
    post_route(http_, "/tokenize", [this](const std::string& text, httplib::Response& res) {
      guarded(res, [&] {
        const json body = parse_body(text);
        const auto content = body.find("content");
        if (content == body.end() || !content->is_string()) {
          throw ApiError("'content' must be a string", "content");
        }
        const auto ids = tokenizer_.encode(content->get<std::string>());
        res.set_content(dump({{"tokens", ids}}), "application/json");
      });
    });
    post_route(http_, "/detokenize", [this](const std::string& text, httplib::Response& res) {
      guarded(res, [&] {
        const json body = parse_body(text);
        const auto tokens = body.find("tokens");
        if (tokens == body.end() || !tokens->is_array()) {
          throw ApiError("'tokens' must be a list of token ids", "tokens");
        }
        std::vector<int32_t> ids;
        for (const auto& t : *tokens) {
          if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
              t.get<int64_t>() >= tokenizer_.vocab_size()) {
            throw ApiError(fmt::format("'tokens' holds {}, not a token id in [0, {})", dump(t),
                                       tokenizer_.vocab_size()), "tokens");
          }
          ids.push_back(t.get<int32_t>());
        }
        res.set_content(dump({{"content", tokenizer_.decode(ids)}}), "application/json");
      });
    });
    post_route(http_, "/v1/completions", [this](const std::string& text, httplib::Response& res) {
      guarded(res, [&] { complete(text, res); });
    });
  }

  ~Routes() { http_.stop(); }

  // Binds and prints where; port 0 picks a free port.
  int bind(const std::string& host, int port) {
    const int bound = port == 0 ? http_.bind_to_any_port(host) : (http_.bind_to_port(host, port) ? port : -1);
    if (bound < 0) {
      throw FileError(fmt::format("cannot listen on {}:{} (in use, or not an address of this "
                                  "machine)", host, port));
    }
    return bound;
  }
  void listen() { http_.listen_after_bind(); }
  void stop() { http_.stop(); }

  // Refuses new completions, gives the running ones `grace` seconds, cancels
  // what is left (each choice still ends with its finish_reason and a
  // stream with [DONE]), and waits for the streams to send that.
  void drain(double grace) {
    draining_ = true;
    const auto idle = [this] { return scheduler_.running() + scheduler_.waiting() == 0; };
    const auto until = [](double s) {
      return std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(s * 1e3));
    };
    for (const auto end = until(grace); !idle() && std::chrono::steady_clock::now() < end;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    scheduler_.cancel_all();
    for (const auto end = until(5); !idle() && std::chrono::steady_clock::now() < end;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a stream's poll is 200 ms
  }

 private:
  void complete(const std::string& body, httplib::Response& res) {
    if (draining_) {
      res.set_header("Retry-After", "1");
      reply_error(res, 503, "the server is shutting down", "server_busy");
      return;
    }
    CompletionRequest r = parse_completion_request(body, tokenizer_, vocab_size_, name_);
    r.options.draw(draw_);
    auto c = std::make_shared<Completion>();
    c->id = fmt::format("cmpl-{}", next_id_++);
    c->model = r.model;
    c->created = static_cast<int64_t>(std::time(nullptr));
    for (const auto& p : r.prompts) {
      c->prompt_tokens += static_cast<int64_t>(p.size());
      for (int64_t j = 0; j < r.n; ++j) c->choices.emplace_back(ChoiceText(tokenizer_, r.stop));
    }
    const auto sequences = static_cast<int64_t>(c->choices.size());
    // Room: max_batch decoding and max_queue waiting.
    const int64_t busy = scheduler_.running() + scheduler_.waiting();
    if (busy + sequences > max_batch_ + max_queue_) {
      res.set_header("Retry-After", "1");
      reply_error(res, 503, fmt::format("the server is busy: {} sequences are decoding or waiting, "
                                        "room for {}, and this request has {}", busy,
                                        max_batch_ + max_queue_, sequences), "server_busy");
      return;
    }
    std::random_device fresh;
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(request_timeout_));
    size_t index = 0;
    for (const auto& p : r.prompts) {
      for (int64_t j = 0; j < r.n; ++j, ++index) {
        GenerationRequest g;
        g.prompt = p;
        g.options = r.options;
        g.deadline = deadline;
        g.options.seed(r.seeded ? r.options.seed() + static_cast<uint64_t>(j)
                                : (static_cast<uint64_t>(fresh()) << 32) ^ fresh());
        g.on_token = [c, index](int64_t token) {
          std::lock_guard<std::mutex> lock(c->mutex);
          if (!c->first_token) c->first_token = std::chrono::steady_clock::now();
          const bool more = c->choices[index].text.add(token);
          c->changed.notify_all();
          return more;
        };
        g.on_error = [c](const std::string& message) {
          std::lock_guard<std::mutex> lock(c->mutex);
          if (c->error.empty()) c->error = message;
        };
        g.on_finish = [c, index](FinishReason why) {
          std::lock_guard<std::mutex> lock(c->mutex);
          c->choices[index].finish = why;
          if (c->done()) log_request(*c);
          c->changed.notify_all();
        };
        const int64_t job = scheduler_.submit(std::move(g));
        std::lock_guard<std::mutex> lock(c->mutex);
        c->jobs.push_back(job);
      }
    }
    const auto cancel = [this, c] {
      for (const int64_t job : c->jobs) scheduler_.cancel(job);  // the client left
    };
    if (r.stream) {
      stream(c, res, cancel);
      return;
    }
    answer(c, res, cancel);
  }

  std::string name_;
  int64_t max_batch_, max_queue_;
  double request_timeout_;  // seconds
  Draw draw_;                // every request's
  std::string api_key_;
  int64_t vocab_size_;
  Tokenizer tokenizer_;
  Scheduler scheduler_;
  httplib::Server http_;
  std::atomic<int64_t> next_id_{0};
  std::atomic<bool> draining_{false};
};

}  // namespace serve_routes

struct HttpServer::Impl : serve_routes::Routes {
  using Routes::Routes;
};

HttpServer::HttpServer(const ServeFlags& flags, GPT model, Tokenizer tokenizer)
    : impl_(std::make_unique<Impl>(flags, std::move(model), std::move(tokenizer))) {}
HttpServer::~HttpServer() = default;
int HttpServer::bind(const std::string& host, int port) { return impl_->bind(host, port); }
void HttpServer::listen() { impl_->listen(); }
void HttpServer::stop() { impl_->stop(); }
void HttpServer::drain(double grace) { impl_->drain(grace); }

}  // namespace gpt2::app
