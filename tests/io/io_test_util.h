#pragma once
// Helpers shared by the weight-format tests.

#include <torch/types.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>

#include "gpt2/error.h"
#include "gpt2/model/gpt.h"

namespace gpt2::testing {

/// The whole of `path`.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Writes `bytes` as `path`.
inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// A copy of every parameter by name.
inline std::map<std::string, torch::Tensor> snapshot(const GPTImpl& model) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& item : model.named_parameters()) out[item.key()] = item.value().clone();
  return out;
}

/// Whether every parameter of `model` equals `want`'s bit for bit.
inline bool same_tensors(const GPTImpl& model, const std::map<std::string, torch::Tensor>& want) {
  for (const auto& item : model.named_parameters()) {
    if (!torch::equal(item.value(), want.at(item.key()))) return false;
  }
  return model.named_parameters().size() == want.size();
}

/// The message of the FileError `f` throws, or "no FileError".
inline std::string file_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FileError& e) {
    return e.what();
  }
  return "no FileError";
}

/// The message of the FormatError `f` throws, or "no FormatError: ...".
inline std::string format_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("no FormatError: ") + e.what();
  }
  return "no FormatError";
}

}  // namespace gpt2::testing
