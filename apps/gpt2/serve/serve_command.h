#pragma once
// `gpt2 serve`: one model behind OpenAI's completions API over HTTP
// (cpp-httplib), every request decoded in one running batch.

#include <CLI/App.hpp>

#include <cstdint>
#include <string>

namespace gpt2::app {

/// Values of the serve subcommand's flags.
struct ServeFlags {
  /// Any file load_model reads.
  std::string model;
  /// --weights: fp32, bf16 or int8.
  std::string weights = "fp32";
  /// --dtype: float32, bfloat16 or float16 (a GPU's decoding dtype).
  std::string dtype = "float32";
  /// --device: cpu, cuda or cuda:N.
  std::string device = "cpu";
  /// --draw: auto, host or device (gpt2::Draw), for every request.
  std::string draw = "auto";
  /// --no-cuda-graphs: on a GPU, each decoding step op by op.
  bool no_cuda_graphs = false;
  /// --mmap: auto, on or off (gpt2::Mmap); off by default: a server that
  /// runs for days should not depend on the file staying as it is.
  std::string mmap = "off";
  /// Address and port to listen on (port 0: any free one, printed).
  std::string host = "127.0.0.1";
  int port = 8080;
  /// Sequences decoded at once; the others wait.
  int64_t max_batch = 8;
  /// Sequences that may wait; a request beyond gets 503 with Retry-After.
  int64_t max_queue = 64;
  /// When set, every request needs `Authorization: Bearer <key>` (401
  /// otherwise); also read from GPT2_API_KEY.
  std::string api_key;
  /// On SIGINT/SIGTERM: seconds the requests in flight may take to finish
  /// before they are cancelled (each then ends with its finish_reason).
  double shutdown_grace = 10;
  /// Seconds a request may take, waiting and decoding; then each of its
  /// sequences ends with finish_reason "length".
  double request_timeout = 300;
  /// Where the BPE files are; empty: the shipped copy.
  std::string bpe_dir;
};

/// Loads the model, serves until SIGINT or SIGTERM, returns 0. Bad flags or
/// files throw gpt2::Error; a port that cannot be bound throws FileError.
int run_serve(const ServeFlags& flags);

/// Registers `serve` on `app`; its callback stores the exit code in `*rc`.
void add_serve_command(CLI::App& app, int* rc);

}  // namespace gpt2::app
