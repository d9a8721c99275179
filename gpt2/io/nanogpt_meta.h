#pragma once
/// nanoGPT's data/<dataset>/meta.pkl, as its shakespeare_char/prepare.py
/// writes it with pickle.dump: {'vocab_size': n, 'itos': {id: char},
/// 'stoi': {char: id}}. nanoGPT's `train.py` reads the vocabulary size from
/// it and `sample.py` the characters; its GPT-2-token datasets
/// (shakespeare, openwebtext) have none.
///
/// Read through the library's pickle gate in its plain-data dialect
/// (gpt2/io/checkpoint/pickle.h): values only, no global, nothing run.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpt2 {

/// The character vocabulary a meta.pkl holds.
struct NanoGPTCharMeta {
  /// The characters (each one Unicode character as UTF-8) in id order.
  std::vector<std::string> itos;
  /// itos.size(), as the file's vocab_size says.
  int64_t vocab_size() const { return static_cast<int64_t>(itos.size()); }
};

/// Reads `path`, a meta.pkl. FormatError naming the file and the rule
/// broken for a pickle the gate refuses or one that is not such a
/// vocabulary: vocab_size missing, not an int or outside [1, 65536] (ids
/// are uint16); itos without exactly ids 0 .. vocab_size - 1, or a value
/// that is not one character; stoi (when there) not itos's inverse.
/// FileError when it cannot be read.
NanoGPTCharMeta read_nanogpt_meta(const std::string& path);

/// The same check of a meta.pkl already in memory; `name` stands for the
/// path in messages.
NanoGPTCharMeta parse_nanogpt_meta(std::string_view bytes, const std::string& name);

/// The bytes of a meta.pkl for `itos` (a pickle, protocol 2, that Python's
/// pickle.load reads as prepare.py's dict). InputError for an empty
/// vocabulary or one past 65536 characters.
std::string nanogpt_meta_pickle(const std::vector<std::string>& itos);

}  // namespace gpt2
