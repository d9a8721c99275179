#pragma once
// `gpt2 bench`: speed figures printed beside a reference measured in the
// same run (memory bandwidth, tiktoken-free tokenizer MB/s), never asserted
// by tests.

#include <CLI/App.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace gpt2::app {

/// Values of `bench generate`.
struct BenchGenerateFlags {
  std::string preset = "gpt2";
  int64_t prompt_tokens = 16;
  int64_t new_tokens = 256;
  int repeats = 3;
  /// Weight formats to decode with, side by side (fp32 first).
  std::vector<std::string> weights = {"fp32", "bf16", "int8"};
  /// Whether --weights was given (a GPU decodes float32 weights only).
  bool weights_given = false;
  /// cpu, cuda or cuda:N; on a GPU the rows are batch sizes, not formats.
  std::string device = "cpu";
  /// On a GPU: the batch sizes decoded side by side (prompts of equal length).
  std::vector<int64_t> batches = {1, 32};
  /// On a GPU: the weights' dtype (float32, bfloat16, float16).
  std::string dtype = "float32";
  /// On a GPU: decoding steps replayed from CUDA graphs ("on"), op by op
  /// ("off"), or both side by side.
  std::vector<std::string> graphs = {"on", "off"};
  /// On a GPU: 0 decodes greedily; above, each token is drawn at this
  /// temperature (top_k below when it is above 0), where `draws` say.
  double temperature = 0;
  int64_t top_k = 0;
  /// On a GPU: where sampled tokens are drawn (gpt2::Draw's names), side by
  /// side.
  std::vector<std::string> draws = {"auto"};
};

/// On a GPU: tokens/s of decoding with the KV cache (greedy, or sampled
/// at flags.temperature) at each of flags.batches, with and without CUDA
/// graphs, each draw of flags.draws, weights in flags.dtype, alternating,
/// median of `repeats`.
int run_bench_generate_device(const BenchGenerateFlags& flags, std::ostream& out);

/// Tokens/s of greedy decoding with and without the KV cache (alternating,
/// median of `repeats`), and the memory-bandwidth bound: bytes of weights
/// read per token over a read bandwidth measured in the same run.
int run_bench_generate(const BenchGenerateFlags& flags, std::ostream& out);

/// The line the CPU benches print first: cores, the BLAS and its threads,
/// torch's intra-op threads.
void print_runtime(std::ostream& out);

/// MB/s and tokens of the GPT-2 tokenizer on `path`, median of `repeats`.
int run_bench_tokenize(const std::string& path, int repeats, std::ostream& out);

/// Registers `bench generate` and `bench tokenize` on `app`.
void add_bench_command(CLI::App& app, int* rc);

/// A step's shape flags, shared by `bench train`, `bench ops` and `bench
/// products`: --preset (a `gpt2 train` preset), --batch-size and --seq (1 to
/// 1024 each).
void add_step_shape_flags(CLI::App& cmd, std::string& preset, int64_t& batch, int64_t& seq);

}  // namespace gpt2::app
