#pragma once
// `gpt2 serve`'s HTTP plumbing apart from its routes: bodies read under one
// bound, errors as OpenAI's error object, and the two ways a completion is
// answered (whole, or as server-sent events).

#include <httplib.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "apps/gpt2/serve/completion_state.h"

namespace gpt2::app {

/// The largest request body (413 beyond), counted as it arrives, chunked or not.
inline constexpr size_t kMaxBody = size_t{1} << 20;
/// Threads that answer connections: so many slow or idle clients at once
/// leave /health answering.
inline constexpr size_t kWorkers = 128;

/// Sets `res` to OpenAI's error object with HTTP `status`.
void reply_error(httplib::Response& res, int status, const std::string& message,
                 const std::string& type, const std::string& param = "");

/// Registers POST `path` on `http`: `handler` gets the body, read and
/// counted here (413 past kMaxBody, 400 for a body that cannot be read).
void post_route(httplib::Server& http, const char* path,
                std::function<void(const std::string& body, httplib::Response& res)> handler);

/// Runs `f`, answering what it throws as OpenAI's error object: 400 for the
/// request's fault (ApiError, InputError); 500 for the server's, in the
/// library's words (gpt2::Error) or, for anything else, a sentence of ours
/// with the cause on standard error.
void guarded(httplib::Response& res, const std::function<void()>& f);

/// The whole response once every choice of `c` has ended (500 with the
/// error object when one ended in an error). Past the first second it is
/// sent chunked, after a space each second (JSON allows leading white
/// space): a client that went away fails that write, and `cancel` runs.
void answer(const std::shared_ptr<Completion>& c, httplib::Response& res,
            std::function<void()> cancel);

/// Server-sent events: a chunk per piece of text as it comes, one with each
/// choice's finish_reason, then "data: [DONE]". A client that leaves runs
/// `cancel`.
void stream(const std::shared_ptr<Completion>& c, httplib::Response& res,
            std::function<void()> cancel);

}  // namespace gpt2::app
