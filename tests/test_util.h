#pragma once
// Helpers shared by the tests: tiny configs and the name oracle.

#include <gtest/gtest.h>
#include <torch/types.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/model/config.h"
#include "gpt2/ops/settings.h"

namespace gpt2::testing {

/// 2 layers, n_embd 32: the default for tests whose number does not need
/// the real size.
inline GPTConfig tiny_config() {
  return GPTConfig().block_size(16).vocab_size(96).n_layer(2).n_head(4).n_embd(32);
}

/// nanoGPT's / Hugging Face's parameter names for n_layer blocks, written out
/// independently of the library (bias = true).
inline std::vector<std::string> nanogpt_names(int n_layer) {
  std::vector<std::string> names = {"transformer.wte.weight", "transformer.wpe.weight"};
  for (int i = 0; i < n_layer; ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    for (const char* leaf :
         {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
          "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
          "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"}) {
      names.push_back(h + leaf);
    }
  }
  names.insert(names.end(), {"transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight"});
  return names;
}

/// Whether a parameter name is a residual projection, by name: the oracle the
/// init tests hold the flag-driven init against.
inline bool is_residual_projection(const std::string& name) {
  return name.find(".c_proj.weight") != std::string::npos;
}

/// Sets the process-wide product backend for one scope; the rule's choice
/// after.
class BackendScope {
 public:
  explicit BackendScope(MatmulBackend b) { set_matmul_backend(b); }
  ~BackendScope() { reset_matmul_backend(); }
  BackendScope(const BackendScope&) = delete;
  BackendScope& operator=(const BackendScope&) = delete;
};

/// A fresh folder named after the running test, removed with everything in
/// it when the object goes.
class TempDir {
 public:
  TempDir() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("gpt2_" + std::string(test->test_suite_name()) + "_" + test->name() + "_" +
             std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// `name` inside the folder.
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  /// How many entries the folder holds.
  int entries() const {
    int n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) n += entry.exists();
    return n;
  }

 private:
  std::filesystem::path path_;
};

/// The message of the `Error` (a gpt2::Error type) `f` throws, or "no error".
template <class Error>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

/// The message of the FileError `f` throws, or "no error".
inline std::string file_error_of(const std::function<void()>& f) { return error_of<FileError>(f); }

/// A (rows, columns) int64 tensor of token ids, one vector per row.
inline torch::Tensor id_rows(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<torch::Tensor> t;
  for (const auto& r : rows) t.push_back(torch::tensor(r, torch::kLong));
  return torch::stack(t);
}

}  // namespace gpt2::testing
