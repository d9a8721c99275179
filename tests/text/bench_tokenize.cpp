// bench_tokenize FILE: single-thread throughput of gpt2::Tokenizer::encode
// on FILE, median of 5 runs after one warm-up; prints MB/s and token count.
// Pair with bench_tiktoken.js on the same file, run in the same session.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gpt2/text/tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FILE\n", argv[0]);
    return 2;
  }
  try {
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "bench_tokenize: cannot open %s\n", argv[1]);
      return 1;
    }
    const std::string text((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
    const gpt2::Tokenizer tokenizer = gpt2::Tokenizer::gpt2();
    std::size_t tokens = tokenizer.encode(text).size();  // warm-up
    std::vector<double> seconds;
    for (int run = 0; run < 5; ++run) {
      const auto start = std::chrono::steady_clock::now();
      tokens = tokenizer.encode(text).size();
      const std::chrono::duration<double> took =
          std::chrono::steady_clock::now() - start;
      seconds.push_back(took.count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double mb = static_cast<double>(text.size()) / 1e6;
    std::printf("gpt2::Tokenizer  %.2f MB/s (median of 5; min %.2f, max %.2f)"
                "  %zu bytes  %zu tokens\n",
                mb / seconds[2], mb / seconds[4], mb / seconds[0], text.size(),
                tokens);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_tokenize: %s\n", e.what());
    return 1;
  }
  return 0;
}
