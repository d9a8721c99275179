#pragma once
// Hugging Face's config.json for GPT-2, read and written (internal to
// gpt2/io; hf_gpt2.h's readers and writers use it).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpt2/model/config.h"

namespace gpt2::detail {

/// What config.json says, each field only when present and well typed.
struct HfConfig {
  std::optional<int64_t> n_head, n_layer, n_embd, vocab_size, n_positions;
  std::optional<Gelu> gelu;
};

/// Reads config.json's `text` ("" when there is none: nothing is known);
/// each field of the wrong type or value is a line in `problems`.
HfConfig parse_config(const std::string& text, std::vector<std::string>& problems);

}  // namespace gpt2::detail
