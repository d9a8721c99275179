#pragma once
// `gpt2 serve`'s HTTP side: the routes (OpenAI's completions, models,
// health, tokenize, detokenize) on cpp-httplib, over one Scheduler.

#include <memory>
#include <string>

#include "apps/gpt2/serve/serve_command.h"
#include "gpt2/model/gpt.h"
#include "gpt2/text/tokenizer.h"

namespace gpt2::app {

/// One model behind the routes.
class HttpServer {
 public:
  /// Starts the scheduler over `model`; the limits come from `flags`.
  HttpServer(const ServeFlags& flags, GPT model, Tokenizer tokenizer);
  ~HttpServer();
  /// Binds; port 0 picks a free port. Returns the port; FileError if it
  /// cannot be bound.
  int bind(const std::string& host, int port);
  /// Serves until stop().
  void listen();
  void stop();
  /// Refuses new completions, gives the running ones `grace` seconds,
  /// cancels the rest (each still ends with its finish_reason, a stream
  /// with [DONE]) and waits for the streams to send that.
  void drain(double grace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpt2::app
