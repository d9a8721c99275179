#pragma once
/// Typed errors for bad input from users: configs, token ids, files, flags.
/// Every message names the thing and the values. Internal invariants use
/// TORCH_CHECK instead.

#include <sstream>
#include <stdexcept>
#include <string>

namespace gpt2 {

/// Base of every error this library throws for bad user input.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A GPTConfig (or preset name) that cannot describe a model.
class ConfigError : public Error {
 public:
  using Error::Error;
};

/// A tensor handed to the model with the wrong shape, dtype or values.
class InputError : public Error {
 public:
  using Error::Error;
};

/// Throws InputError with `parts` written one after another unless `ok`:
/// a caller's mistake, named where it is checked.
template <class... Parts>
void check_input(bool ok, const Parts&... parts) {
  if (ok) return;
  std::ostringstream message;
  (message << ... << parts);
  throw InputError(message.str());
}

/// A file that cannot be written, read, or is not what it should be
/// (checkpoint, export). The message names the path.
class FileError : public Error {
 public:
  using Error::Error;
};

/// A checkpoint whose names, shapes, dtypes or config do not fit the model.
/// Nothing was changed when it is thrown.
class CheckpointError : public FileError {
 public:
  using FileError::FileError;
};

/// A file whose bytes break a rule of its format (safetensors, llm.c, a
/// checksum). The message names the path and the rule.
class FormatError : public FileError {
 public:
  using FileError::FileError;
};

}  // namespace gpt2
