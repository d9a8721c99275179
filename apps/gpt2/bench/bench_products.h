#pragma once
// `gpt2 bench products`: each of the model's Linear shapes, forward and
// backward, on oneDNN's sgemm and on torch's (the system BLAS), alternating
// in one run, and whether gpt2::choose_matmul_backend() picked the faster.

#include <CLI/App.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>

namespace gpt2::app {

/// Values of `bench products`.
struct BenchProductsFlags {
  std::string preset = "gpt2";
  int64_t batch = 4;
  int64_t seq = 64;
  int repeats = 5;
};

/// Prints the table; returns 1 when the rule's backend was more than 5%
/// slower over one step's products, else 0.
int run_bench_products(const BenchProductsFlags& flags, std::ostream& out);

/// Registers `products` under the `bench` subcommand.
void add_bench_products_command(CLI::App& bench, int* rc);

}  // namespace gpt2::app
