#include "apps/gpt2/serve/http_replies.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "apps/gpt2/serve/completions.h"
#include "gpt2/error.h"

namespace gpt2::app {

using nlohmann::json;

void reply_error(httplib::Response& res, int status, const std::string& message,
                 const std::string& type, const std::string& param) {
  res.status = status;
  res.set_content(dump(error_body(message, type, param)), "application/json");
}

void post_route(httplib::Server& http, const char* path,
                std::function<void(const std::string& body, httplib::Response& res)> handler) {
  http.Post(path, [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                                 const httplib::ContentReader& read) {
    std::string body;
    bool too_large = false;
    const bool whole = read([&](const char* data, size_t length) {
      if (body.size() + length > kMaxBody) {
        too_large = true;
        return false;
      }
      body.append(data, length);
      return true;
    });
    // httplib refuses a Content-Length past its own bound before reading.
    const std::string length = req.get_header_value("Content-Length");
    too_large = too_large || (!whole && !length.empty() &&
                              std::strtoull(length.c_str(), nullptr, 10) > kMaxBody);
    if (too_large || !whole) {
      res.set_header("Connection", "close");
      if (too_large) {
        reply_error(res, 413, fmt::format("the body is larger than {} bytes", kMaxBody),
                    "invalid_request_error");
      } else {
        reply_error(res, 400, "the body could not be read", "invalid_request_error");
      }
      return;
    }
    handler(body, res);
  });
}

void guarded(httplib::Response& res, const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    reply_error(res, 400, e.what(), "invalid_request_error", e.param);
  } catch (const InputError& e) {
    reply_error(res, 400, e.what(), "invalid_request_error");
  } catch (const Error& e) {
    reply_error(res, 500, e.what(), "server_error");
  } catch (const std::exception& e) {
    fmt::print(stderr, "error     {}\n", e.what());
    std::fflush(stderr);
    reply_error(res, 500, "the server failed on this request (its log says why)", "server_error");
  }
}

void answer(const std::shared_ptr<Completion>& c, httplib::Response& res,
            std::function<void()> cancel) {
  {
    std::unique_lock<std::mutex> lock(c->mutex);
    if (c->changed.wait_for(lock, std::chrono::seconds(1), [&] { return c->done(); })) {
      bool failed = false;
      const json body = c->final_body(failed);
      res.status = failed ? 500 : 200;
      res.set_content(dump(body), "application/json");
      return;
    }
  }
  res.set_chunked_content_provider(
      "application/json",
      [c](size_t, httplib::DataSink& sink) {
        std::unique_lock<std::mutex> lock(c->mutex);
        if (!c->changed.wait_for(lock, std::chrono::seconds(1), [&] { return c->done(); })) {
          lock.unlock();
          return sink.write(" ", 1);
        }
        bool failed = false;
        const std::string body = dump(c->final_body(failed));
        lock.unlock();
        sink.write(body.data(), body.size());
        sink.done();
        return true;
      },
      [cancel = std::move(cancel)](bool success) {
        if (!success) cancel();
      });
}

void stream(const std::shared_ptr<Completion>& c, httplib::Response& res,
            std::function<void()> cancel) {
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [c](size_t, httplib::DataSink& sink) {
        std::unique_lock<std::mutex> lock(c->mutex);
        c->changed.wait_for(lock, std::chrono::milliseconds(200));
        const std::string events = c->take_events();
        const bool done = c->done();
        lock.unlock();
        if (!events.empty() && !sink.write(events.data(), events.size())) return false;
        if (done) {
          static const std::string kDone = "data: [DONE]\n\n";
          sink.write(kDone.data(), kDone.size());
          sink.done();
        }
        return true;
      },
      [cancel = std::move(cancel)](bool success) {
        if (!success) cancel();
      });
}

}  // namespace gpt2::app
