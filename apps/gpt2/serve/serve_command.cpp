#include "apps/gpt2/serve/serve_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/common/model_flags.h"
#include "apps/gpt2/common/stop_signal.h"
#include "apps/gpt2/serve/server.h"
#include "gpt2/error.h"
#include "gpt2/io/model_source.h"
#include "gpt2/text/tokenizer.h"

namespace gpt2::app {

int run_serve(const ServeFlags& given) {
  ServeFlags flags = given;
  if (const char* key = std::getenv("GPT2_API_KEY"); flags.api_key.empty() && key) flags.api_key = key;
  const torch::Device device = device_for(flags.device, flags.weights);
  const torch::ScalarType dtype = decode_dtype_for(flags.device, flags.dtype);
  LoadedModel loaded =
      load_model_file(flags.model, ModelSourceOptions().mmap(mmap_from_string(flags.mmap)));
  to_decode_device(*loaded.model, device, dtype, std::cout);
  for (const auto& note : loaded.notes) fmt::print("note      {}\n", note);
  Tokenizer tokenizer = flags.bpe_dir.empty() ? Tokenizer::gpt2() : Tokenizer::from_dir(flags.bpe_dir);
  if (loaded.model->config.vocab_size() < tokenizer.vocab_size()) {
    throw ConfigError(fmt::format("'{}' has vocab_size {}: gpt2 serve speaks GPT-2's BPE and needs "
                                  "a model of at least its {} tokens", flags.model,
                                  loaded.model->config.vocab_size(), tokenizer.vocab_size()));
  }
  fmt::print("model     {} ({}): {}\n", flags.model, to_string(loaded.format),
             to_string(loaded.model->config));
  apply_weights(*loaded.model, flags.weights, std::cout);
  if (device.is_cuda()) {
    fmt::print("decoding  a KV cache slot for each of {} sequences; {}\n", flags.max_batch,
               flags.no_cuda_graphs ? "each step op by op (--no-cuda-graphs)"
                                    : "each step replayed from a CUDA graph of 1, 2, 4, ... slots");
  }
  HttpServer server(flags, std::move(loaded.model), std::move(tokenizer));
  const int port = server.bind(flags.host, flags.port);
  fmt::print("serving   http://{}:{}/v1/completions (and /v1/models, /health, /tokenize, "
             "/detokenize); {} sequences decoding at once, {} waiting at most{}; Ctrl-C stops\n",
             flags.host, port, flags.max_batch, flags.max_queue,
             flags.api_key.empty() ? "" : "; API key required");
  std::fflush(stdout);
  StopOnSignal stop_on_signal;
  std::atomic<bool> stopped{false};
  std::thread watcher([&] {
    while (!stopped && !stop_on_signal.stop()->load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!stopped) server.drain(flags.shutdown_grace);
    server.stop();
  });
  server.listen();
  stopped = true;
  watcher.join();
  fmt::print("stopped   by a signal\n");
  return 0;
}

void add_serve_command(CLI::App& app, int* rc) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve a model over HTTP with OpenAI's completions API, requests batched together");
  add_weights_flag(*cmd, flags->weights);
  add_device_flag(*cmd, flags->device);
  add_decode_dtype_flag(*cmd, flags->dtype);
  add_mmap_flag(*cmd, flags->mmap);
  cmd->add_option("--model", flags->model,
                  "The model file (checkpoint .pt, Hugging Face .safetensors or folder, llm.c .bin)")
      ->required();
  cmd->add_option("--host", flags->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", flags->port, "Port to listen on (0: any free port, printed)")
      ->check(gpt2::app::in_range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--max-batch", flags->max_batch, "Requests decoded at once; the others wait")
      ->check(gpt2::app::in_range(int64_t{1}, int64_t{256}))
      ->capture_default_str();
  cmd->add_option("--max-queue", flags->max_queue,
                  "Sequences that may wait for a place; beyond, 503 with Retry-After")
      ->check(gpt2::app::in_range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--request-timeout", flags->request_timeout,
                  "Seconds a request may take, waiting and decoding; its sequences then end "
                  "with finish_reason length")
      ->check(gpt2::app::in_range(0.001, 86400.0))
      ->capture_default_str();
  cmd->add_option("--shutdown-grace", flags->shutdown_grace,
                  "On SIGINT/SIGTERM, seconds the requests in flight may take before they are "
                  "cancelled")
      ->check(gpt2::app::in_range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--api-key", flags->api_key,
                  "Require 'Authorization: Bearer KEY' (default: $GPT2_API_KEY, else none)");
  add_draw_flag(*cmd, flags->draw);
  add_no_cuda_graphs_flag(*cmd, flags->no_cuda_graphs);
  cmd->add_option("--bpe-dir", flags->bpe_dir,
                  "Folder with GPT-2's encoder.json and vocab.bpe (default: the shipped copy)");
  cmd->callback([flags, rc] { *rc = run_serve(*flags); });
}

}  // namespace gpt2::app
